#!/usr/bin/env bash
# A hostile (or broken) relay cannot make attach --ssh grow without bound: a stream that names
# source 1,048,576 first (a CLOSED record) is refused as corrupt at once, in one line per run,
# and the viewer's memory stays small; nothing is recorded. The relay is a script given with
# --via that prints a valid first line and that record (no sshd).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

version=$("$CUSCOPE" --version | awk '{print $2}')
cat >"$T/evil-relay" <<EOF2
#!/usr/bin/env python3
import struct, sys, time
sys.stdout.buffer.write(b"cuscope-relay 1 $version evil\\n")
# RELAY_CLOSED (3) for source 2^20, no payload
sys.stdout.buffer.write(struct.pack("<IIII", 3, 1 << 20, 0, 0))
sys.stdout.buffer.flush()
time.sleep(0.2)
EOF2
chmod +x "$T/evil-relay"
rc=0
/usr/bin/time -f 'maxrss_kb %M' -o "$T/time.txt" timeout 30 "$CUSCOPE" attach --ssh evilhost \
	--via "$T/evil-relay {host}" --record -o "$T/run-%h.cuscope" --duration 4 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 124 ] && fail "attach hung on the hostile stream"
grep -q "corrupt\|not a cuscope relay\|given up" "$T/err" || fail "no line about the broken stream: $(head -c 400 "$T/err")"
rss=$(awk '/^maxrss_kb/ {print $2}' "$T/time.txt")
if [ -z "$rss" ] || [ "$rss" -ge 200000 ]; then
	fail "attach used ${rss:-?} kB at its peak on a hostile stream"
fi
[ -e "$T/run-evilhost.cuscope" ] && fail "a capture was written from nothing"
exit 0
