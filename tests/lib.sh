# shellcheck shell=bash
# Shared helpers for tests/runtime/*.sh and tests/tui/*.sh. Source it first thing:
#   . "$(dirname "$0")/../lib.sh"
# A test exits 0 (pass), 1 (fail, one reason line on stdout) or 77 (skip, one reason line).
# Environment: BUILD (default build), CUSCOPE (default $BUILD/bin/cuscope), CUSCOPE_KEEP=1 keeps
# the per-test temporary directory, PYTHON (default python3).

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CUSCOPE=${CUSCOPE:-$BUILD/bin/cuscope}
CUSCOPE_ASAN=${CUSCOPE_ASAN:-$ROOT/build-asan/bin/cuscope}
PROGS=$BUILD/tests/progs
PYTHON=${PYTHON:-python3}
TEST_NAME=$(basename "$0" .sh)
T=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-$TEST_NAME.XXXXXX")
TMUX_SOCK="cuscope-test-$$"
TMUX_USED=0
BG_PIDS=()
export LC_ALL=C.UTF-8 LANG=C.UTF-8

# Runs at exit: stops what this test started (by pid), removes the temporary directory.
lib_cleanup()
{
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	if [ "$TMUX_USED" = 1 ]; then
		tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
	fi
	if [ "${CUSCOPE_KEEP:-0}" = 1 ]; then
		echo "kept $T" >&2
	else
		rm -rf "$T"
	fi
}
trap lib_cleanup EXIT

fail()
{
	echo "$*"
	exit 1
}

skip()
{
	echo "$*"
	exit 77
}

# Fails unless the cuscope binary exists.
need_cuscope()
{
	[ -x "$CUSCOPE" ] || fail "$CUSCOPE not built (run make)"
}

# one_line NAME WANT_RC REGEX CMD...: runs CMD, checks the exit status and the single cuscope: line.
one_line()
{
	local name=$1 want=$2 regex=$3
	shift 3
	timeout 60 "$@" >"$T/$name.out" 2>"$T/$name.err"
	local rc=$? lines
	[ "$rc" = "$want" ] || fail "$name: exit $rc, want $want: $(cat "$T/$name.err")"
	lines=$(grep -c 'cuscope:' "$T/$name.err")
	[ "$lines" = 1 ] || fail "$name: want one cuscope: line, got $lines: $(tr '\n' '|' <"$T/$name.err")"
	grep -qE "$regex" "$T/$name.err" || fail "$name: line does not say /$regex/: $(cat "$T/$name.err")"
}

# Fails unless every named test program was built.
need_prog()
{
	local p
	for p in "$@"; do
		[ -x "$PROGS/$p" ] || fail "$PROGS/$p not built (make tests-build)"
	done
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s; returns 0 once it succeeds, 1 on timeout.
wait_until()
{
	local limit=$1 i=0
	shift
	while ! "$@"; do
		i=$((i + 1))
		[ "$i" -ge $((limit * 10)) ] && return 1
		sleep 0.1
	done
	return 0
}

pid_gone()
{
	! kill -0 "$1" 2>/dev/null
}

# bg_wait PID SECONDS: waits for a background child; sets RC (124 and kills it on timeout).
bg_wait()
{
	local pid=$1 limit=$2
	if ! wait_until "$limit" pid_gone "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		RC=124
		return 0
	fi
	wait "$pid"
	RC=$?
}

# cs_record [-b BIN] [-t SECONDS] CAPTURE NAME -- CMD...: runs `cuscope record -o CAPTURE -- CMD`
# in the background, stdout to $T/NAME.out and stderr to $T/NAME.err; sets CS_PID (the cuscope
# pid) and, after it ends, RC (124 if it ran past SECONDS, default 60).
cs_record()
{
	local bin=$CUSCOPE limit=60
	while :; do
		case $1 in
		-b) bin=$2; shift 2 ;;
		-t) limit=$2; shift 2 ;;
		*) break ;;
		esac
	done
	local cap=$1 name=$2
	shift 3
	"$bin" record -o "$cap" -- "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
	CS_PID=$!
	BG_PIDS+=("$CS_PID")
	bg_wait "$CS_PID" "$limit"
	[ "$RC" = 124 ] && fail "cuscope record of $* ran past ${limit}s"
	return 0
}

# cs_stats [-b BIN] CAPTURE JSON: writes `cuscope stats --format=json CAPTURE` to JSON; fails
# unless it exits 0.
cs_stats()
{
	local bin=$CUSCOPE
	if [ "$1" = -b ]; then
		bin=$2
		shift 2
	fi
	local rc=0
	timeout 60 "$bin" stats --format=json "$1" >"$2" 2>"$2.err" || rc=$?
	[ "$rc" = 0 ] || fail "cuscope stats --format=json $(basename "$1") exited $rc: $(head -c 300 "$2.err")"
}

# one_line_error FILE WHAT: fails unless FILE holds exactly one line starting "cuscope: ".
one_line_error()
{
	local n
	n=$(wc -l <"$1")
	[ -s "$1" ] || fail "$2: nothing on stderr"
	[ "$n" = 1 ] || fail "$2: $n lines on stderr, want 1: $(head -c 200 "$1" | tr '\n' '|')"
	grep -q '^cuscope: ' "$1" || fail "$2: stderr does not start with 'cuscope: ': $(head -c 200 "$1")"
}

# Fails if a sanitizer reported anything in the given files.
no_sanitizer_report()
{
	local f
	for f in "$@"; do
		if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined)' "$f"; then
			fail "sanitizer report in $(basename "$f"): $(grep -m1 -E 'ERROR|runtime error' "$f")"
		fi
	done
}

# Python preamble for py_check: loads the stats JSON (argv[1]) and the app's stdout (argv[2]).
PY_PRELUDE=$(cat <<'PYEOF'
import json, sys
def fail(msg):
    print(msg)
    sys.exit(1)
try:
    J = json.load(open(sys.argv[1], encoding="utf-8"))
except Exception as e:
    fail("stats JSON does not parse: %s" % e)
OUT = open(sys.argv[2], encoding="utf-8", errors="replace").read() if len(sys.argv) > 2 else ""
CAUSES = ["ring_full", "no_viewer_evicted", "viewer_slow", "string_table_full", "no_memory", "unmatched_pop"]
if not isinstance(J, dict):
    fail("stats JSON is not one object")
for sec in ("nvtx", "threads", "processes", "losses"):
    if not isinstance(J.get(sec), list):
        fail("stats JSON: section %r missing or not an array" % sec)
for r in J["nvtx"]:
    for k in ("name", "domain", "style", "count", "total_ns", "min_ns", "p50_ns", "p99_ns", "max_ns"):
        if k not in r:
            fail("nvtx row %r lacks %r" % (r.get("name"), k))
    if r["style"] not in ("PushPop", "StartEnd", "Mark", "Inferred"):
        fail("nvtx row %r: style %r" % (r["name"], r["style"]))
    if (r["style"] == "Inferred") != (r["domain"] == "inferred"):  # steps inferred from kernels (steps.h)
        fail("nvtx row %r: style %r in domain %r" % (r["name"], r["style"], r["domain"]))
    if r["style"] == "Mark":
        if r["total_ns"] != 0:
            fail("mark %r: total_ns %r, want 0" % (r["name"], r["total_ns"]))
    elif not (0 <= r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]):
        fail("nvtx row %r: min<=p50<=p99<=max does not hold: %r" % (r["name"], r))
    elif not (r["count"] * r["min_ns"] <= r["total_ns"] <= r["count"] * r["max_ns"]):
        fail("nvtx row %r: total_ns outside count*[min,max]: %r" % (r["name"], r))
for r in J["losses"]:
    if set(r) < {"cause", "count"}:
        fail("losses row lacks cause/count: %r" % r)
got_causes = [r["cause"] for r in J["losses"]]
if len(set(got_causes)) != len(got_causes) or not set(CAUSES) <= set(got_causes):
    fail("losses causes %r, want one row each of %r (more causes allowed)" % (sorted(got_causes), CAUSES))

def app(key):
    """Integer after `key` on the app's stdout line starting with key (first match)."""
    for line in OUT.splitlines():
        parts = line.split()
        if parts and parts[0] == key and len(parts) > 1:
            return int(parts[-1])
    fail("app output lacks a %r line (app stdout passed through?)" % key)

def app_tid(name):
    for line in OUT.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "tid" and parts[1] == name:
            return int(parts[2])
    fail("app output lacks 'tid %s'" % name)

def nvtx_rows(name, domain="", style="PushPop"):
    return [r for r in J["nvtx"] if r["name"] == name and r["domain"] == domain and r["style"] == style]

def row(name, domain="", style="PushPop"):
    rs = nvtx_rows(name, domain, style)
    if len(rs) != 1:
        have = sorted((r["name"], r["domain"], r["style"], r["count"]) for r in J["nvtx"])
        fail("want one nvtx row %r domain %r %s, got %d; rows: %r" % (name, domain, style, len(rs), have[:12]))
    return rs[0]

def expect_nvtx(spec, exact=True):
    """spec: (name, domain, style, count) tuples; exact: no other rows allowed."""
    for name, domain, style, count in spec:
        r = row(name, domain, style)
        if r["count"] != count:
            fail("nvtx %r domain %r %s: count %d, want %d" % (name, domain, style, r["count"], count))
    if exact:
        want = {(n, d, s) for n, d, s, _ in spec}
        for r in J["nvtx"]:
            if (r["name"], r["domain"], r["style"]) not in want:
                fail("unexpected nvtx row %r domain %r %s count %d" % (r["name"], r["domain"], r["style"], r["count"]))

def min_at_least(name, ns, domain="", style="PushPop"):
    r = row(name, domain, style)
    if r["min_ns"] < ns:
        fail("nvtx %r: min_ns %d < %d (durations wrong?)" % (name, r["min_ns"], ns))
    if r["max_ns"] > 30 * 10**9:
        fail("nvtx %r: max_ns %d is over 30 s" % (name, r["max_ns"]))

def loss(cause):
    return [r for r in J["losses"] if r["cause"] == cause][0]["count"]

def no_losses(*allowed):
    for r in J["losses"]:
        if r["cause"] not in allowed and r["count"] != 0:
            fail("loss %s = %d, want 0" % (r["cause"], r["count"]))

def thread(tid):
    rs = [t for t in J["threads"] if t.get("tid") == tid]
    if len(rs) != 1:
        fail("want one threads row for tid %d, got %d: %r" % (tid, len(rs), J["threads"][:10]))
    return rs[0]

def process(pid):
    rs = [p for p in J["processes"] if p.get("pid") == pid]
    if len(rs) != 1:
        fail("want one processes row for pid %d, got %d: %r" % (pid, len(rs), J["processes"]))
    return rs[0]
PYEOF
)

# py_check JSON [APP_STDOUT] <<'PY' ... PY: runs the Python check on stdin with PY_PRELUDE.
py_check()
{
	local code
	code=$(cat)
	"$PYTHON" -c "$PY_PRELUDE
$code" "$@"
	local rc=$?
	[ "$rc" = 0 ] || exit 1
}

# --- tmux: one private server per test ---------------------------------------------------------

tm()
{
	tmux -L "$TMUX_SOCK" -f /dev/null "$@"
}

# tm_start WIDTH HEIGHT COMMAND: starts a detached session "t" running COMMAND under sh.
tm_start()
{
	TMUX_USED=1
	tm new-session -d -s t -x "$1" -y "$2" "$3" || fail "tmux new-session failed"
	tm set-option -t t remain-on-exit on >/dev/null 2>&1
}

tm_screen()
{
	tm capture-pane -p -t t 2>/dev/null
}

tm_screen_has()
{
	tm_screen | grep -qE -- "$1"
}

# tm_wait REGEX SECONDS WHAT: waits for the screen to match REGEX, else fails with the screen.
tm_wait()
{
	if ! wait_until "$2" tm_screen_has "$1"; then
		tm_screen >"$T/screen.txt"
		fail "$3: screen did not show /$1/ in ${2}s; first lines: $(head -n 3 "$T/screen.txt" | tr -s ' ' | tr '\n' '|')"
	fi
}

# tm_wait_gone REGEX SECONDS WHAT: waits for the screen to stop matching REGEX (a redraw under
# load can take longer than a fixed sleep), else fails with the screen.
tm_screen_lacks()
{
	! tm_screen_has "$1"
}

tm_wait_gone()
{
	if ! wait_until "$2" tm_screen_lacks "$1"; then
		tm_screen >"$T/screen.txt"
		fail "$3: screen still showed /$1/ after ${2}s; first lines: $(head -n 3 "$T/screen.txt" | tr -s ' ' | tr '\n' '|')"
	fi
}

tm_keys()
{
	tm send-keys -t t "$@"
}

# file_has FILE REGEX
file_has()
{
	[ -f "$1" ] && grep -qE -- "$2" "$1"
}

# tm_pids: sets CS_PID (the cuscope process in the pane) and APP_PID (its first child).
tm_pids()
{
	local shpid
	shpid=$(tm display-message -p -t t '#{pane_pid}')
	CS_PID=$(pgrep -P "$shpid" | head -n 1)
	[ -n "$CS_PID" ] || fail "no cuscope process under the tmux pane"
	wait_until 10 app_child_found || fail "cuscope (pid $CS_PID) has no child process (app not started)"
}

app_child_found()
{
	APP_PID=$(pgrep -P "$CS_PID" | head -n 1)
	[ -n "$APP_PID" ]
}

# tm_run_cuscope ARGS...: runs "cuscope ARGS" in a 120x40 pane; its exit status goes to $T/exit.
tm_run_cuscope()
{
	local w=${TM_WIDTH:-120} h=${TM_HEIGHT:-40}
	tm_start "$w" "$h" "cd $T && $CUSCOPE $*; echo EXIT=\$? >$T/exit; exec sleep 3600"
}

# tm_wait_exit WANT SECONDS: waits for the pane's cuscope to exit with status WANT.
tm_wait_exit()
{
	wait_until "$2" test -s "$T/exit" || fail "cuscope did not exit within $2 s; screen: $(tm_screen | head -n 2 | tr -s ' ' | tr '\n' '|')"
	local got
	got=$(sed -n 's/^EXIT=//p' "$T/exit")
	[ "$got" = "$1" ] || fail "cuscope exited $got, want $1"
}
