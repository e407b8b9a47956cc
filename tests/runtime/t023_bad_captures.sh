#!/usr/bin/env bash
# Damaged input for every verb that reads a capture (stats, export, diff, info): foreign files and
# newer versions give one line and exit 2; truncation at many offsets gives exit 0 with
# "recovered N of M chunks" when the header and a chunk are intact, else one line and exit 2;
# random byte flips give exit 0 with a "corrupt" warning or one line and exit 2. Never a crash:
# the last rounds run build-asan/bin/cuscope and fail on any sanitizer report.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_threads

cs_record "$T/rec.cap" app -- "$PROGS/nvtx_threads"
[ "$RC" = 0 ] || fail "record exited $RC"
cc -O2 -I"$ROOT/include" -D_GNU_SOURCE -o "$T/gen" "$ROOT/tests/bench/gen_capture.c" "$BUILD/obj/libviewer.a" \
	-lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" || fail "cannot build gen_capture: $(head -c 300 "$T/cc.err")"
"$T/gen" "$T/gen.cap" 5000 >/dev/null || fail "gen_capture failed"

# run_verb BIN VERB FILE: runs the verb on FILE; sets RC, output in $T/v.out / $T/v.err.
run_verb()
{
	local bin=$1 verb=$2 f=$3
	RC=0
	case $verb in
	stats) timeout 30 "$bin" stats --format=json "$f" >"$T/v.out" 2>"$T/v.err" || RC=$? ;;
	export) timeout 30 "$bin" export -o "$T/v.json" "$f" >"$T/v.out" 2>"$T/v.err" || RC=$? ;;
	info) timeout 30 "$bin" info "$f" >"$T/v.out" 2>"$T/v.err" || RC=$? ;;
	diff) timeout 30 "$bin" diff --format=json "$f" "$f" >"$T/v.out" 2>"$T/v.err" || RC=$? ;;
	esac
	[ "$RC" -ge 124 ] && fail "$verb on $(basename "$f") ($4) crashed or hung: exit $RC: $(head -c 300 "$T/v.err")"
	[ "$bin" = "$CUSCOPE_ASAN" ] && no_sanitizer_report "$T/v.err"
	return 0
}

# expect_usage_error VERB FILE WHAT: exit 2 and one line.
expect_usage_error()
{
	[ "$RC" = 2 ] || fail "$1 on $3: exit $RC, want 2 ($(head -c 200 "$T/v.err"))"
	one_line_error "$T/v.err" "$1 on $3"
}

printf 'hello, I am text\n' >"$T/text"
: >"$T/empty"
gzip -c "$T/rec.cap" >"$T/gz.cap"
mkdir "$T/dir"
python3 - "$T/rec.cap" "$T" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
def patch(name, off, val):
    b = bytearray(d); b[off:off + 4] = val.to_bytes(4, "little"); open(sys.argv[2] + "/" + name, "wb").write(b)
patch("newver.cap", 8, 99)     # capture format version
patch("newwire.cap", 32, 99)   # wire version
patch("feat.cap", 16, 1)       # required feature bit
PY
for verb in stats export info diff; do
	for f in text empty gz.cap dir newver.cap newwire.cap feat.cap /bin/true; do
		case $f in /*) p=$f ;; *) p=$T/$f ;; esac
		run_verb "$CUSCOPE" "$verb" "$p" "$f"
		expect_usage_error "$verb" "$p" "$f"
	done
done
run_verb "$CUSCOPE" stats "$T/newver.cap" version
grep -q 'newer' "$T/v.err" || fail "newer version message does not say newer: $(cat "$T/v.err")"

# Truncation: offsets around every chunk boundary and inside payloads.
offsets()
{
	python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, bounds = 64, []
while off + 40 <= len(d):
    magic, typ, src, length = struct.unpack_from("<IIII", d, off)
    bounds.append(off + 40 + length)
    off += 40 + length
first = bounds[0] if bounds else len(d) + 1
cand = {0, 1, 8, 63, 64, 65, 80, 103, 104, len(d) - 1}
for b in bounds:
    cand |= {b - 1, b, b + 1, b + 20, b + 39, b + 41}
for i in range(1, 9):
    cand.add(len(d) * i // 9)
for c in sorted(x for x in cand if 0 <= x < len(d)):
    print(c, 1 if c >= first else 0)
PY
}
check_trunc()
{
	local bin=$1 cap=$2 verbs=$3 off ok verb
	while read -r off ok; do
		head -c "$off" "$cap" >"$T/trunc.cap"
		for verb in $verbs; do
			run_verb "$bin" "$verb" "$T/trunc.cap" "truncated at $off"
			if [ "$ok" = 1 ]; then
				[ "$RC" = 0 ] || fail "$verb on $(basename "$cap") cut at $off (a chunk intact): exit $RC: $(head -c 200 "$T/v.err")"
				grep -qE '^cuscope: warning: .*recovered [0-9]+ of [0-9]+ chunks' "$T/v.err" ||
					fail "$verb on $(basename "$cap") cut at $off: no 'recovered N of M chunks' warning: $(head -c 200 "$T/v.err")"
			else
				expect_usage_error "$verb" "$T/trunc.cap" "$(basename "$cap") cut at $off"
			fi
		done
	done < <(offsets "$cap")
}
check_trunc "$CUSCOPE" "$T/rec.cap" "stats export info diff"
check_trunc "$CUSCOPE" "$T/gen.cap" "stats export"

# Byte flips: exit 0 with a corrupt warning (flips inside chunks are all checksummed), or exit 2.
check_flips()
{
	local bin=$1 cap=$2 n=$3 verbs=$4 pos val verb
	while read -r pos val; do
		python3 -c "import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[int(sys.argv[2])] ^= int(sys.argv[3]); open(sys.argv[4], 'wb').write(b)" \
			"$cap" "$pos" "$val" "$T/flip.cap"
		for verb in $verbs; do
			run_verb "$bin" "$verb" "$T/flip.cap" "byte $pos ^ $val"
			case $RC in
			0)
				if grep -v '^cuscope: warning: ' "$T/v.err" | grep -q .; then
					fail "$verb, byte $pos ^ $val: exit 0 with stderr lines that are not warnings: $(head -c 200 "$T/v.err")"
				fi
				if [ "$pos" -ge 64 ] && ! grep -q 'corrupt' "$T/v.err"; then
					fail "$verb, byte $pos ^ $val of $(basename "$cap"): exit 0 without a corrupt warning"
				fi
				;;
			2) one_line_error "$T/v.err" "$verb, byte $pos ^ $val" ;;
			*) fail "$verb, byte $pos ^ $val: exit $RC: $(head -c 200 "$T/v.err")" ;;
			esac
		done
	done < <(python3 -c "
import random, os, sys
r = random.Random(int(sys.argv[2])); size = os.path.getsize(sys.argv[1])
for _ in range(int(sys.argv[3])): print(r.randrange(size), r.randrange(1, 256))" "$cap" "${SEED:-23}" "$n")
}
check_flips "$CUSCOPE" "$T/rec.cap" 60 "stats export"
check_flips "$CUSCOPE" "$T/gen.cap" 30 "stats info"

if [ -x "$CUSCOPE_ASAN" ]; then
	check_trunc "$CUSCOPE_ASAN" "$T/rec.cap" "stats export"
	check_flips "$CUSCOPE_ASAN" "$T/rec.cap" 20 "stats export diff"
	check_flips "$CUSCOPE_ASAN" "$T/gen.cap" 10 "export"
fi
exit 0
