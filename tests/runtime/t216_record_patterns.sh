#!/usr/bin/env bash
# record -o patterns, expanded once by `cuscope record` from its own environment: %r rank, %j
# SLURM_JOB_ID, %p the launched program's pid, %h short host name, %q{VAR}, %% a literal %. The
# result obeys the output rules (0600, no .partial left, a planted link replaced, never followed);
# a bad pattern is one line and exit 2 before anything runs.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

run_rec()
{
	local name=$1
	shift
	timeout 60 env "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
	RC=$?
}
host=$(hostname)
host=${host%%.*}

# All directives but %p: the name is known before the program runs.
run_rec all RANK=2 SLURM_JOB_ID=77 T216_RUN=a "$CUSCOPE" record -o "$T/run-%h-%r-%j-%q{T216_RUN}-100%%.cuscope" \
	-- /bin/echo ran
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/all.err")"
want="$T/run-$host-2-77-a-100%.cuscope"
[ -f "$want" ] || fail "no $want: $(ls "$T" | tr '\n' ' ')"
[ "$(stat -c %a "$want")" = 600 ] || fail "mode $(stat -c %a "$want"), want 600"
ls "$T" | grep -q partial && fail "a .partial was left: $(ls "$T" | tr '\n' ' ')"
cs_stats "$want" "$T/all.json"
py_check "$T/all.json" "$T/all.out" <<'PY'
p = [p for p in J["processes"] if p["cmdline"] == "/bin/echo ran"]
if len(p) != 1 or p[0]["rank"] != 2:
    fail("want /bin/echo ran with rank 2 (record's environment, inherited): %r" % J["processes"])
PY

# %p is the launched program's pid; a planted link at the name is replaced, its target untouched.
# RANK is set in the program's environment only, for the check below: %r reads record's own.
mkdir "$T/p" || fail "mkdir"
run_rec pid SLURM_PROCID=5 "$CUSCOPE" record -o "$T/p/cap-%r-%p.cuscope" -- /bin/sh -c 'echo "pid $$"; exec /bin/echo x'
[ "$RC" = 0 ] || fail "record with %p exited $RC: $(head -c 300 "$T/pid.err")"
pid=$(sed -n 's/^pid //p' "$T/pid.out")
[ -n "$pid" ] || fail "the program did not print its pid: $(cat "$T/pid.out")"
[ -f "$T/p/cap-5-$pid.cuscope" ] || fail "no cap-5-$pid.cuscope: $(ls "$T/p" | tr '\n' ' ')"
[ "$(ls "$T/p" | wc -l)" = 1 ] || fail "other files next to the capture: $(ls "$T/p" | tr '\n' ' ')"

echo keep >"$T/target"
ln -s "$T/target" "$T/link-3.cuscope"
run_rec link RANK=3 "$CUSCOPE" record -o "$T/link-%r.cuscope" -- /bin/echo x
[ "$RC" = 0 ] || fail "record onto a link exited $RC: $(head -c 300 "$T/link.err")"
[ "$(cat "$T/target")" = keep ] || fail "the link's target was written"
[ -L "$T/link-3.cuscope" ] && fail "the link is still there"
[ -f "$T/link-3.cuscope" ] || fail "no capture at link-3.cuscope"

# Errors: one line, exit 2, nothing run, nothing written.
check_bad()
{
	local what=$1 pattern=$2 want=$3
	shift 3
	rm -f "$T/ran"
	run_rec bad "$@" "$CUSCOPE" record -o "$T/bad/$pattern" -- /bin/touch "$T/ran"
	[ "$RC" = 2 ] || fail "$what: exit $RC, want 2: $(head -c 300 "$T/bad.err")"
	one_line_error "$T/bad.err" "$what"
	grep -qF -- "$want" "$T/bad.err" || fail "$what: error lacks '$want': $(cat "$T/bad.err")"
	[ -e "$T/ran" ] && fail "$what: the program ran"
	[ -z "$(ls "$T/bad")" ] || fail "$what: files written: $(ls "$T/bad" | tr '\n' ' ')"
}
mkdir "$T/bad" || fail "mkdir"
check_bad "unknown %y" 'x-%y.cap' "unknown pattern %y" RANK=1
check_bad "unset %q" 'x-%q{T216_UNSET}.cap' "T216_UNSET is not set" -u T216_UNSET
check_bad "unterminated %q{" 'x-%q{T216_RUN.cap' "%q needs {VARIABLE}" T216_RUN=a
check_bad "no rank" 'x-%r.cap' "none of RANK" -u RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u SLURM_PROCID
check_bad "bad rank" 'x-%r.cap' "RANK=-1 is not a rank" RANK=-1
check_bad "no job id" 'x-%j.cap' "SLURM_JOB_ID is not set" -u SLURM_JOB_ID
check_bad "lone %" 'x-%' "lone %" RANK=1
# %p: the name is opened once the program started, its folder checked before: a missing one is
# one line and exit 2 before the program runs.
rm -f "$T/ran"
run_rec nodir "$CUSCOPE" record -o "$T/missing-dir/x-%p.cap" -- /bin/touch "$T/ran"
[ "$RC" = 2 ] || fail "%p into a missing directory: exit $RC, want 2: $(head -c 300 "$T/nodir.err")"
one_line_error "$T/nodir.err" "%p into a missing directory"
grep -qF "in $T/missing-dir: No such file" "$T/nodir.err" ||
	fail "%p into a missing directory: the line does not name the folder: $(cat "$T/nodir.err")"
[ -e "$T/ran" ] && fail "%p into a missing directory: the program ran"
exit 0
