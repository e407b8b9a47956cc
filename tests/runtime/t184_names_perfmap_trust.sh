#!/usr/bin/env bash
# /tmp is everyone's: the collector reads /tmp/perf-PID.map only when it is a regular file owned
# by the process's user, opened without following links. A JIT'd loop named in a map of our own is
# "planted_loop" (control); through a symbolic link, or in a file owned by another user, the name
# is not taken (the frame stays [unknown]). A line longer than any buffer (a 3,000-byte name) does
# not stop the reading of the lines after it. A forked child's own map is read from its start (not
# from where the parent's map had been read up to).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog perfmap_planted

# top MODE...: records perfmap_planted MODE... and prints "function module" of the hottest row.
top()
{
	cs_record "$T/cap.$1" "$1" -- "$PROGS/perfmap_planted" "$@"
	[ "$RC" = 0 ] || fail "record ($1) exited $RC: $(head -c 300 "$T/$1.err")"
	grep -q 'jit done' "$T/$1.out" || fail "perfmap_planted $1 did not finish: $(head -c 300 "$T/$1.out")"
	cs_stats "$T/cap.$1" "$T/$1.json"
	"$PYTHON" - "$T/$1.json" <<'PY' || fail "no hot rows ($1)"
import json, sys
rows = json.load(open(sys.argv[1]))["hot"]
if not rows:
    sys.exit(1)
top = max(rows, key=lambda r: r["samples"])
print(top["function"], top["module"])
PY
}

r=$(top own) || exit 1
[ "$r" = "planted_loop [perf-map]" ] || fail "control: hottest is '$r', want planted_loop [perf-map]"
r=$(top longline) || exit 1
[ "$r" = "planted_loop [perf-map]" ] || fail "after a 3,000-byte line: hottest is '$r', want planted_loop [perf-map]"
cs_record "$T/cap.fork" fork -- "$PROGS/perfmap_planted" fork
[ "$RC" = 0 ] || fail "record (fork) exited $RC: $(head -c 300 "$T/fork.err")"
grep -q 'child done' "$T/fork.out" || fail "the forked child did not finish: $(head -c 300 "$T/fork.out")"
cs_stats "$T/cap.fork" "$T/fork.json"
py_check "$T/fork.json" <<'PY'
rows = [r for r in J["hot"] if r["function"] == "forked_loop"]
if not rows or max(r["samples"] for r in rows) < 20:
    fail("the forked child's JIT loop is not named from its own perf map: %r"
         % [(r["pid"], r["function"], r["module"], r["samples"]) for r in J["hot"][:6]])
PY
mkdir "$T/attacker"
r=$(top link "$T/attacker") || exit 1
case $r in *planted_loop*) fail "a perf map reached through a symbolic link was read: '$r'" ;; esac
[ "$(id -u)" = 0 ] || exit 0
r=$(top owner 65534) || exit 1
case $r in *planted_loop*) fail "a perf map owned by another user (uid 65534) was read: '$r'" ;; esac
exit 0
