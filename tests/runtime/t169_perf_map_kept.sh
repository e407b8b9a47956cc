#!/usr/bin/env bash
# --python-perf removes only the perf map the traced process wrote. The program swaps its own
# /tmp/perf-PID.map (CPython goes on writing to the unlinked file) for something that is not that
# process's file; each must still be there after the process ended:
#   link   a symlink to a victim file (never followed: the victim keeps its bytes, the link stays)
#   other  a regular file owned by another uid (65534; root only, else that case is skipped)
#   stale  a regular file last written an hour before the process started
#   fifo   a FIFO (never opened)
# and, as a control, `own` leaves CPython's map in place: it is removed; so are the maps of
# short-lived Python children that ended before their collector connected.
# Needs a CPython >= 3.12 with perf trampolines (else a visible SKIP).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
PY=${PYTHON312:-}
if [ -z "$PY" ]; then
	for v in /usr/bin/python3.1[2-9] /root/.pyenv/versions/3.1[2-9]*/bin/python3; do
		[ -x "$v" ] && { PY=$v; break; }
	done
fi
[ -n "$PY" ] || skip "SKIP: no CPython >= 3.12 on this machine (set PYTHON312)"
"$PY" -c 'import sys, sysconfig; sys.exit(sys.version_info < (3, 12) or not sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE"))' ||
	skip "SKIP: $PY is not a CPython >= 3.12 with perf trampolines"

cat >"$T/swap.py" <<'PYEOF'
import os, sys, time
mode, victim = sys.argv[1], sys.argv[2]
path = "/tmp/perf-%d.map" % os.getpid()
if not os.path.isfile(path):
    print("no map from CPython")
    sys.exit(3)
if mode != "own":
    os.unlink(path)
    if mode == "link":
        os.symlink(victim, path)
    elif mode == "fifo":
        os.mkfifo(path, 0o600)
    else:
        with open(path, "w") as f:
            f.write("planted\n")
        if mode == "other":
            os.chown(path, 65534, 65534)
        if mode == "stale":
            old = time.time() - 3600
            os.utime(path, (old, old))
def work():
    return sum(i * i for i in range(20000))
work()
print("pid", os.getpid())
PYEOF
echo "victim bytes" >"$T/victim"
modes="own link stale fifo"
[ "$(id -u)" = 0 ] && modes="$modes other"
for mode in $modes; do
	RC=0
	timeout 60 "$CUSCOPE" record --python-perf -o "$T/$mode.cuscope" -- "$PY" "$T/swap.py" "$mode" "$T/victim" \
		>"$T/$mode.out" 2>"$T/$mode.err" </dev/null || RC=$?
	[ "$RC" = 0 ] || fail "$mode: record exited $RC: $(head -c 300 "$T/$mode.out" "$T/$mode.err")"
	pid=$(awk '$1 == "pid" {print $2}' "$T/$mode.out")
	map=/tmp/perf-$pid.map
	case $mode in
	own) [ ! -e "$map" ] || fail "own: CPython's own $map was not removed" ;;
	link)
		[ -L "$map" ] || fail "link: the planted symlink $map was removed"
		[ "$(cat "$T/victim")" = "victim bytes" ] || fail "link: the victim changed: $(cat "$T/victim")" ;;
	fifo) [ -p "$map" ] || fail "fifo: the planted FIFO $map was removed" ;;
	*) [ "$(cat "$map" 2>/dev/null)" = planted ] || fail "$mode: the planted $map was removed or changed" ;;
	esac
	rm -f "$map"
done

# Children that end before their collector connects (their whole stream in PID.final): their maps
# go too (they were left behind: /tmp filled with one per short-lived Python child).
cat >"$T/kids.py" <<'PYEOF'
import os, subprocess, sys
for _ in range(3):
    subprocess.run([sys.executable, "-c", "import os; print('kid', os.getpid())"], check=True)
print("parent", os.getpid())
PYEOF
RC=0
timeout 60 "$CUSCOPE" record --python-perf -o "$T/kids.cuscope" -- "$PY" "$T/kids.py" >"$T/kids.out" 2>"$T/kids.err" </dev/null || RC=$?
[ "$RC" = 0 ] || fail "kids: record exited $RC: $(head -c 300 "$T/kids.err")"
pids=$(awk '$1 == "kid" || $1 == "parent" {print $2}' "$T/kids.out")
[ "$(echo "$pids" | wc -w)" = 4 ] || fail "kids: want 4 pids, got: $(head -c 200 "$T/kids.out")"
left=""
for p in $pids; do
	[ -e "/tmp/perf-$p.map" ] && left="$left /tmp/perf-$p.map"
	rm -f "/tmp/perf-$p.map"
done
[ -z "$left" ] || fail "kids: CPython's maps left behind:$left"
[ "$(id -u)" = 0 ] || echo "note: not root: the other-owner case was not run" >&2
exit 0
