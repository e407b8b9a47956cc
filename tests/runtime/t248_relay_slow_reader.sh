#!/usr/bin/env bash
# A relay whose stdout nobody reads (a stalled SSH link) keeps reading the collectors: what does
# not fit its bounded buffer is dropped and counted per source (RELAY_LOSS records, which arrive
# once the link moves again), the relay's memory stays bounded, and the traced program's speed
# is what it is with a reader that keeps up. Prints the numbers.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_flood

mkdir -m 700 "$T/fast" "$T/slow"
# run_case ROOT STALL_S: a relay on ROOT read by a reader that first stalls STALL_S seconds, and
# a flood armed under ROOT meanwhile; prints "pairs=N lost_frames=M frames=F rss_kb=R".
run_case()
{
	local root=$1 stall=$2
	CUSCOPE_SESSION_ROOT=$root "$PYTHON" - "$CUSCOPE" "$stall" "$root" "$PROGS/nvtx_flood" <<'PY'
import glob, os, select, struct, subprocess, sys, time
cuscope, stall, root, flood = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
relay = subprocess.Popen([cuscope, "relay"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
first = relay.stdout.readline().decode()
if not first.startswith("cuscope-relay 1 "):
    print("bad first line %r" % first); sys.exit(1)
arm = subprocess.run([cuscope, "run", "--detached", "--", flood, "3", "2"], capture_output=True, text=True)
if arm.returncode:
    print("run --detached failed: " + arm.stderr); sys.exit(1)
pid = int(arm.stdout.split()[1])
fd = relay.stdout.fileno()
buf = bytearray()
time.sleep(stall)
def rss():
    for l in open("/proc/%d/status" % relay.pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    return 0
peak = rss()
def drain(until):
    global peak
    while time.time() < until:
        r, _, _ = select.select([fd], [], [], 0.05)
        peak = max(peak, rss())
        if r:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return False
            buf.extend(chunk)
        elif not os.path.exists("/proc/%d" % pid):
            return True
    return True
drain(time.time() + 15)          # the flood ends (about 3 s after it started)
drain(time.time() + 1)           # the last loss counts
relay.stdin.close()
drain(time.time() + 10)
relay.wait(10)
lost, frames, off = {}, 0, 0
while off + 16 <= len(buf):
    kind, source, ftype, length = struct.unpack_from("<IIII", buf, off)
    if kind == 2:
        lost[source] = struct.unpack_from("<QQ", buf, off + 16)[0]
    elif kind == 1:
        frames += 1
    off += 16 + length
logs = glob.glob(os.path.join(root, "*", "output.log"))
pairs = 0
for l in open(logs[0]) if logs else []:
    if l.startswith("pairs "):
        pairs = int(l.split()[1])
print("pairs=%d lost_frames=%d frames=%d rss_kb=%d" % (pairs, sum(lost.values()), frames, peak))
PY
}
fast=$(run_case "$T/fast" 0) || fail "fast reader: $fast"
slow=$(run_case "$T/slow" 6) || fail "stalled reader: $slow"
echo "fast reader:    $fast"
echo "stalled reader: $slow"
val() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }
if [ "$(val pairs "$fast")" -le 0 ] || [ "$(val pairs "$slow")" -le 0 ]; then
	fail "no pairs count: $fast / $slow"
fi
[ "$(val lost_frames "$slow")" -gt 0 ] || fail "a stalled reader lost nothing in the relay: $slow"
[ "$(val rss_kb "$slow")" -lt 200000 ] || fail "the relay grew past its bound: $slow"
# Noisy shared CPUs: only a stall of the program (a small fraction of its speed) fails.
[ $(($(val pairs "$slow") * 10)) -ge $(($(val pairs "$fast") * 6)) ] ||
	fail "the program slowed down behind a stalled relay: $slow vs $fast"
exit 0
