#!/usr/bin/env bash
# --follow limits which descendants of the launched command are traced: a shell script starting
# three different programs is recorded with all, none and a list of names; `cuscope info` lists
# exactly the processes followed. The launched process stays followed across its own exec, a
# forked copy follows its program's name, and a bad value gives one line and exit 2 (record, live,
# run).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fork_exec

cat >"$T/three.sh" <<'SH'
/bin/true
/bin/echo three
/bin/sleep 0.05
exit 3
SH

# procs CAPTURE: the sorted program names in the capture (first word of each process's cmdline)
procs()
{
	"$CUSCOPE" info "$1" 2>&1 | sed -n 's/^  pid [0-9]*  *ppid [0-9]*  *\([^ ]*\).*/\1/p' | sort | tr '\n' ' '
}

# check FOLLOW WANT: records the script with --follow=FOLLOW; the capture holds WANT.
check()
{
	local follow=$1 want=$2 got
	timeout 60 "$CUSCOPE" record --follow="$follow" -o "$T/$follow.cap" -- sh "$T/three.sh" \
		>"$T/$follow.out" 2>"$T/$follow.err" </dev/null
	RC=$?
	[ "$RC" = 3 ] || fail "--follow=$follow: record exited $RC, want the script's 3: $(head -c 300 "$T/$follow.err")"
	got=$(procs "$T/$follow.cap")
	[ "$got" = "$want" ] || fail "--follow=$follow: capture holds '$got', want '$want'"
	grep -q "final counts" "$T/$follow.err" && fail "--follow=$follow: $(grep -m1 'final counts' "$T/$follow.err")"
	return 0
}

check all "/bin/echo /bin/sleep /bin/true sh "
check none "sh "
check true,sleep "/bin/sleep /bin/true sh "
check echo "/bin/echo sh "

# The launched process is followed whatever it execs; with none, nothing it starts is.
timeout 60 "$CUSCOPE" record --follow=none -o "$T/env.cap" -- env sh -c '/bin/true; exit 4' >/dev/null 2>"$T/env.err" </dev/null
rc=$?
[ "$rc" = 4 ] || fail "env: record exited $rc, want 4: $(head -c 300 "$T/env.err")"
got=$(procs "$T/env.cap")
# env's own image may be in the capture too (same pid, before its exec); /bin/true never is.
case $got in
"sh " | "env sh ") ;;
*) fail "--follow=none with env exec'ing sh: capture holds '$got', want 'sh ' (the launched pid)" ;;
esac

# A forked copy (no exec) is the same program: followed by its name, not with none.
for spec in "none:1" "fork_exec:2" "other:1"; do
	follow=${spec%%:*}
	want=${spec##*:}
	timeout 60 "$CUSCOPE" record --follow="$follow" -o "$T/fork.cap" -- "$PROGS/fork_exec" noexec >/dev/null 2>&1 </dev/null
	n=$("$CUSCOPE" info "$T/fork.cap" 2>&1 | grep -c '^  pid ')
	[ "$n" = "$want" ] || fail "fork_exec noexec --follow=$follow: $n processes, want $want"
done

# Bad values: one line, exit 2, nothing run.
for bad in "" "a/b" "a,,b" "a,"; do
	for verb in record live run; do
		case $verb in
		record) args=(record -o "$T/bad.cap") ;;
		live) args=() ;;
		run) args=(run --detached) ;;
		esac
		"$CUSCOPE" "${args[@]}" --follow="$bad" -- touch "$T/ran" >"$T/bad.out" 2>"$T/bad.err" </dev/null
		rc=$?
		[ "$rc" = 2 ] || fail "$verb --follow='$bad': exit $rc, want 2"
		[ "$(wc -l <"$T/bad.err")" = 1 ] || fail "$verb --follow='$bad': want one line, got: $(cat "$T/bad.err")"
		grep -q "^cuscope: --follow" "$T/bad.err" || fail "$verb --follow='$bad': $(cat "$T/bad.err")"
		[ -e "$T/ran" ] && fail "$verb --follow='$bad': the command ran"
	done
done
exit 0
