#!/usr/bin/env bash
# Outputs never destroy what was there: a regular output is written as FILE.partial (0600, no
# link followed) and renamed onto FILE when complete. A failed run (`record -o FILE -- typo`)
# leaves FILE as it was; a killed recorder leaves a readable FILE.partial, and the next run
# refuses to clobber it; a link named as output is replaced, its target untouched; a FIFO (and,
# as root, /dev/null) is written in place, never unlinked. The same for `export` (.json, .gz).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_threads long_running
umask 022

mode_of() { stat -c %a "$1"; }

# A good capture to export from later.
cs_record "$T/good.cap" good -- "$PROGS/nvtx_threads"
[ "$RC" = 0 ] || fail "record of nvtx_threads exited $RC: $(cat "$T/good.err")"
[ "$(mode_of "$T/good.cap")" = 600 ] || fail "capture created with mode $(mode_of "$T/good.cap"), want 600"
[ -e "$T/good.cap.partial" ] && fail "a complete recording left good.cap.partial"

# A typo in the command: FILE keeps its old content, no partial is left.
echo "old content" >"$T/keep.cap"
timeout 60 "$CUSCOPE" record -o "$T/keep.cap" -- "$T/no-such-program" >"$T/typo.out" 2>"$T/typo.err"
rc=$?
[ "$rc" = 127 ] || fail "record -- typo exited $rc, want 127"
[ "$(cat "$T/keep.cap" 2>/dev/null)" = "old content" ] || fail "record -- typo destroyed the existing -o file"
[ -e "$T/keep.cap.partial" ] && fail "record -- typo left keep.cap.partial"

# A link named as output is replaced by the capture; what it pointed to stays.
echo "link target" >"$T/target.txt"
ln -s "$T/target.txt" "$T/link.cap"
cs_record "$T/link.cap" link -- /bin/true
[ "$RC" = 0 ] || fail "record -o LINK exited $RC: $(cat "$T/link.err")"
[ "$(cat "$T/target.txt")" = "link target" ] || fail "record -o followed a symlink and overwrote its target"
[ -f "$T/link.cap" ] && [ ! -L "$T/link.cap" ] || fail "record -o LINK did not leave a regular capture file"

# A FIFO is written in place and survives a failed run.
mkfifo "$T/fifo"
cat "$T/fifo" >"$T/fifo.data" &
reader=$!
BG_PIDS+=("$reader")
timeout 60 "$CUSCOPE" record -o "$T/fifo" -- "$T/no-such-program" >/dev/null 2>&1
bg_wait "$reader" 20
[ -p "$T/fifo" ] || fail "record -- typo removed or replaced the FIFO named by -o"
cat "$T/fifo" >"$T/fifo.data" &
reader=$!
BG_PIDS+=("$reader")
timeout 60 "$CUSCOPE" record -o "$T/fifo" -- /bin/true >/dev/null 2>"$T/fifo.err" || fail "record -o FIFO failed: $(cat "$T/fifo.err")"
bg_wait "$reader" 20
[ -p "$T/fifo" ] || fail "record -o FIFO replaced the FIFO"
head -c 7 "$T/fifo.data" | grep -q CUSCAP || fail "the capture did not come through the FIFO"

if [ "$(id -u)" = 0 ]; then
	timeout 60 "$CUSCOPE" record -o /dev/null -- "$T/no-such-program" >/dev/null 2>&1
	timeout 60 "$CUSCOPE" record -o /dev/null -- /bin/true >/dev/null 2>&1
	[ -c /dev/null ] || {
		rm -f /dev/null
		mknod -m 0666 /dev/null c 1 3
		fail "record -o /dev/null as root replaced the device node (restored it)"
	}
	timeout 60 "$CUSCOPE" export -o /dev/null "$T/good.cap" >/dev/null 2>&1
	[ -c /dev/null ] || {
		rm -f /dev/null
		mknod -m 0666 /dev/null c 1 3
		fail "export -o /dev/null as root replaced the device node (restored it)"
	}
fi

# A killed recorder leaves FILE.partial, readable; FILE keeps what it was.
echo "previous capture" >"$T/killed.cap"
"$CUSCOPE" record -o "$T/killed.cap" -- "$PROGS/long_running" -t 30 >"$T/killed.out" 2>"$T/killed.err" </dev/null &
rec=$!
BG_PIDS+=("$rec")
wait_until 20 grep -q '^pid ' "$T/killed.out" || fail "long_running did not start under record"
app=$(sed -n 's/^pid //p' "$T/killed.out")
BG_PIDS+=("$app")
sleep 1.5
kill -KILL "$rec"
wait "$rec" 2>/dev/null
kill -TERM "$app" 2>/dev/null
[ "$(cat "$T/killed.cap")" = "previous capture" ] || fail "a killed recorder changed the existing -o file"
[ -f "$T/killed.cap.partial" ] || fail "a killed recorder left no killed.cap.partial"
[ "$(mode_of "$T/killed.cap.partial")" = 600 ] || fail "partial capture has mode $(mode_of "$T/killed.cap.partial"), want 600"
timeout 60 "$CUSCOPE" stats --format=json "$T/killed.cap.partial" >"$T/killed.json" 2>"$T/killed-stats.err" ||
	fail "the partial capture of a killed recorder does not read: $(head -c 300 "$T/killed-stats.err")"
grep -q '"step"' "$T/killed.json" || fail "the partial capture holds no step ranges"
# The next run does not clobber it: one line, exit 2.
size=$(stat -c %s "$T/killed.cap.partial")
timeout 60 "$CUSCOPE" record -o "$T/killed.cap" -- /bin/true >"$T/again.out" 2>"$T/again.err"
rc=$?
[ "$rc" = 2 ] || fail "record over a leftover .partial exited $rc, want 2"
one_line_error "$T/again.err" "record over a leftover .partial"
grep -q 'partial' "$T/again.err" || fail "the line does not name the .partial file: $(cat "$T/again.err")"
[ "$(stat -c %s "$T/killed.cap.partial")" = "$size" ] || fail "the leftover .partial was changed"

# Export: 0600, links replaced not followed, .gz too, the old file kept when export fails.
for out in out.json out.json.gz; do
	ln -s "$T/target.txt" "$T/$out"
	timeout 60 "$CUSCOPE" export -o "$T/$out" "$T/good.cap" >/dev/null 2>"$T/export.err" ||
		fail "export -o $out failed: $(cat "$T/export.err")"
	[ "$(cat "$T/target.txt")" = "link target" ] || fail "export -o $out followed a symlink"
	[ -f "$T/$out" ] && [ ! -L "$T/$out" ] || fail "export -o $out did not leave a regular file"
	[ "$(mode_of "$T/$out")" = 600 ] || fail "export -o $out created mode $(mode_of "$T/$out"), want 600"
	[ -e "$T/$out.partial" ] && fail "export -o $out left a .partial"
done
zcat "$T/out.json.gz" | head -c 20 | grep -q traceEvents || fail "out.json.gz is not gzip'd trace JSON"
exit 0
