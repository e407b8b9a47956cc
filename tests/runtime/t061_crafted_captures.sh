#!/usr/bin/env bash
# Crafted captures cost readers time and memory linear in the file: a zstd bomb (2.7 MB of chunks
# that each decode to 4 MiB; the same padded, so that only its record count can stop it), 12 MB of
# tiny MANIFEST chunks, one process stream per chunk (also with each naming a string by the largest
# id), all-overlapping start/end ranges (open at once, or one after another), a new thread per
# record, a new CUDA context or stream per record, and GPU ops that all overlap on one stream.
# `info`, `stats` and `export` each finish within 10 s and 512 MB of RSS, exiting 0 or 2 with one
# line. A FIFO or a device is refused at once with one line (exit 2), never read or waited on.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

cc -O2 -I"$ROOT/include" -D_GNU_SOURCE -o "$T/crafted" "$ROOT/tests/runtime/crafted_capture.c" -lzstd -lz \
	2>"$T/cc.err" || fail "cannot build crafted_capture: $(head -c 300 "$T/cc.err")"

# measure OUT ERR CMD...: runs CMD (stdout to OUT, stderr to ERR, killed after 30 s); prints
# "RC SECONDS MAXRSS_KB".
measure()
{
	"$PYTHON" - "$@" <<'PY'
import resource, subprocess, sys, time
out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
t0 = time.monotonic()
p = subprocess.Popen(cmd, stdout=open(out, "wb"), stderr=open(err, "wb"), stdin=subprocess.DEVNULL)
try:
    p.wait(timeout=30)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
# The only child this interpreter reaped: its peak RSS.
print(p.returncode, "%.2f" % (time.monotonic() - t0), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}

# Also under a 512 MiB address-space limit, where an allocation beyond it would abort (not with
# ASan, whose shadow memory needs more).
LIMIT=()
if command -v prlimit >/dev/null && ! nm -u "$CUSCOPE" 2>/dev/null | grep -q __asan_init; then
	LIMIT=(prlimit --as=$((512 << 20)))
fi

check_file()
{
	local f=$1 what=$2 verb rc secs rss
	for verb in info stats export; do
		local args=("$verb" "$f")
		[ "$verb" = export ] && args=(export -o "$T/out.json" "$f")
		read -r rc secs rss < <(measure "$T/v.out" "$T/v.err" "${LIMIT[@]}" "$CUSCOPE" "${args[@]}")
		case $rc in
		0) grep -v '^cuscope: warning: ' "$T/v.err" | grep -q . && fail "$verb on $what: exit 0 with errors: $(head -c 200 "$T/v.err")" ;;
		2) one_line_error "$T/v.err" "$verb on $what" ;;
		*) fail "$verb on $what: exit $rc after ${secs}s: $(head -c 200 "$T/v.err")" ;;
		esac
		awk -v s="$secs" 'BEGIN { exit !(s <= 10) }' || fail "$verb on $what took ${secs}s (limit 10 s)"
		[ "$rss" -le $((512 * 1024)) ] || fail "$verb on $what used $((rss / 1024)) MB (limit 512 MB)"
		echo "$verb $what: exit $rc, ${secs}s, $((rss / 1024)) MB"
	done
}

# Both capture formats: version 1 files (no chunk context) still read, so they must be bounded too.
for ver in 2 1; do
	"$T/crafted" bomb "$T/bomb.cap" 2700 "$ver" >/dev/null || fail "crafted bomb failed"
	check_file "$T/bomb.cap" "a 2.7 MB zstd bomb (format $ver)"
	grep -q 'decodes to more than' "$T/v.err" || fail "the bomb is not named as such: $(cat "$T/v.err")"
	# Fewer bomb chunks (within the byte budget) padded to the same size: the records stop it.
	"$T/crafted" bombpad "$T/bomb.cap" 2700 "$ver" >/dev/null || fail "crafted bombpad failed"
	check_file "$T/bomb.cap" "a 2.7 MB padded zstd bomb of marks (format $ver)"
	grep -q 'records per byte' "$T/v.err" || fail "the padded bomb is not named as such: $(cat "$T/v.err")"
	for kind in manifests sources strids async rows threads gpu gpurows; do
		"$T/crafted" "$kind" "$T/$kind.cap" 12288 "$ver" >/dev/null || fail "crafted $kind failed"
		check_file "$T/$kind.cap" "12 MB of $kind (format $ver)"
		rm -f "$T/$kind.cap"
	done
done
# The manifest is kept up to its bound, the rest said in a warning.
"$T/crafted" manifests "$T/m.cap" 8192 >/dev/null
"$CUSCOPE" info "$T/m.cap" >"$T/m.out" 2>"$T/m.err" || fail "info on many manifests failed: $(head -c 200 "$T/m.err")"
grep -q 'package_0=' "$T/m.out" || fail "info lost the manifest's first lines"
grep -q 'manifest' "$T/m.err" || fail "info does not say the manifest was cut: $(head -c 200 "$T/m.err")"

# Not regular files: refused without reading (a FIFO with no writer would block forever).
mkfifo "$T/fifo.cap"
for f in "$T/fifo.cap" /dev/zero; do
	for verb in info stats export; do
		rc=0
		timeout 10 "$CUSCOPE" "$verb" "$f" >"$T/v.out" 2>"$T/v.err" || rc=$?
		[ "$rc" = 2 ] || fail "$verb on $f: exit $rc, want 2 (124 = it blocked)"
		one_line_error "$T/v.err" "$verb on $f"
		grep -q 'not a regular file' "$T/v.err" || fail "$verb on $f: $(cat "$T/v.err")"
	done
done
exit 0
