#!/usr/bin/env bash
# Every FAIL/SKIP line of tests/gpu/run.sh says its reason in words. Its check functions run here
# (sourced, no GPU needed) against the failures a GPU host can meet: python_perf with no python,
# an old python, its stack_grep helper missing, not executable on this host, missing a library,
# printing nonsense, a failing record; check.py giving no verdict; an export that fails; the
# doctor check on a machine without a GPU. Before, a missing helper gave "cuscope_py_hot on
# tests/gpu/run.sh: of line sampled stacks".
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
CC=${CC:-cc}
REAL_BUILD=$BUILD
REAL_CUSCOPE=$CUSCOPE

# shellcheck source=tests/gpu/run.sh
. "$ROOT/tests/gpu/run.sh"
cd "$ROOT" || fail "cannot cd to $ROOT"

# run_check NAME STATUS REGEX FUNC [ENV=VALUE...]: runs check FUNC with those settings; its one
# result line must have STATUS and match REGEX.
run_check()
{
	local name=$1 want=$2 regex=$3 func=$4 kv
	shift 4
	(
		for kv in "$@"; do
			export "${kv?}"
		done
		gpu_init
		"$func" >"$T/$name.result" 2>"$T/$name.stderr"
		echo "${#RES_NAME[@]}	${RES_STATUS[0]:-}	${RES_INFO[0]:-}" >"$T/$name.res"
	)
	local n status info
	IFS=$'\t' read -r n status info <"$T/$name.res"
	[ "$n" = 1 ] || fail "$name: $n result lines, want 1: $(cat "$T/$name.result")"
	[ "$status" = "$want" ] || fail "$name: $status, want $want: $info"
	echo "$info" | grep -qE -- "$regex" || fail "$name: reason does not say /$regex/: '$info'"
	echo "$name: $status $info"
}

old="" new=""
for p in /usr/bin/python3 /root/.pyenv/versions/3.1[01].*/bin/python3; do
	[ -x "$p" ] && "$p" -c 'import sys; sys.exit(0 if sys.version_info < (3, 12) else 1)' 2>/dev/null && old=$p && break
done
for p in $(command -v python3.12 python3.13 2>/dev/null) /root/.pyenv/versions/3.1[2-9].*/bin/python3 /usr/bin/python3; do
	[ -x "$p" ] && "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null && new=$p && break
done

# --- python_perf: the interpreter ---------------------------------------------------------------
run_check nopy SKIP "python3\.99-nowhere not found" check_python_perf PYTHON=python3.99-nowhere
if [ -n "$old" ]; then
	run_check oldpy SKIP "is Python 3\.[0-9]+, older than 3.12" check_python_perf PYTHON="$old"
fi
[ -n "$new" ] || skip "no CPython >= 3.12 here (the helper cases need one to reach the helper)"

# --- python_perf: the stack_grep helper --------------------------------------------------------
run_check nohelper FAIL "helper $T/nobuild/tests/stack_grep not built \(make tests-build\)" check_python_perf \
	PYTHON="$new" BUILD="$T/nobuild" CUSCOPE="$REAL_CUSCOPE"
mkdir -p "$T/badexe/tests" "$T/nolib/tests" "$T/nonsense/tests"
# An ELF header for a machine that does not exist (e_machine 0xffff): execve says ENOEXEC.
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\002\000\377\377' >"$T/badexe/tests/stack_grep"
head -c 200 /dev/zero >>"$T/badexe/tests/stack_grep"
chmod +x "$T/badexe/tests/stack_grep"
run_check badexe FAIL "helper stack_grep cannot be executed on this host" check_python_perf \
	PYTHON="$new" BUILD="$T/badexe" CUSCOPE="$REAL_CUSCOPE"
# A helper linked against a library this host lacks: the loader refuses to start it (exit 127).
echo 'int t161_gone(void) { return 0; }' >"$T/gone.c"
echo 'int t161_gone(void); int main(void) { return t161_gone(); }' >"$T/main.c"
if "$CC" -shared -fPIC -o "$T/libt161gone.so" "$T/gone.c" 2>"$T/cc.err" &&
	"$CC" -o "$T/nolib/tests/stack_grep" "$T/main.c" -L"$T" -lt161gone 2>>"$T/cc.err"; then
	rm -f "$T/libt161gone.so"
	run_check nolib FAIL "helper stack_grep cannot start \(a library it needs is missing here\?\).*libt161gone" \
		check_python_perf PYTHON="$new" BUILD="$T/nolib" CUSCOPE="$REAL_CUSCOPE"
else
	echo "no C compiler ($CC): the missing-library helper not checked: $(head -c 200 "$T/cc.err")" >&2
fi
printf '#!/bin/sh\necho "no stacks today"\n' >"$T/nonsense/tests/stack_grep"
chmod +x "$T/nonsense/tests/stack_grep"
run_check nonsense FAIL "helper stack_grep printed 'no stacks today\|', not 'MATCHING TOTAL FUNCTION'" \
	check_python_perf PYTHON="$new" BUILD="$T/nonsense" CUSCOPE="$REAL_CUSCOPE"

# --- python_perf: the record itself ----------------------------------------------------------
printf '#!/bin/sh\necho "cuscope: record: something broke" >&2\nexit 3\n' >"$T/fake_cuscope"
chmod +x "$T/fake_cuscope"
run_check badrecord FAIL "cuscope record of py_hot.py exited 3: cuscope: record: something broke" \
	check_python_perf PYTHON="$new" BUILD="$REAL_BUILD" CUSCOPE="$T/fake_cuscope"

# --- python_perf end to end on this host (Python frames in sampled stacks) ---------------------
if [ -x "$REAL_BUILD/tests/stack_grep" ]; then
	run_check pyperf PASS "samples with cuscope_py_hot on the stack: [0-9]+ of [0-9]+" \
		check_python_perf PYTHON="$new" BUILD="$REAL_BUILD" CUSCOPE="$REAL_CUSCOPE"
fi

# --- check.py giving no verdict, an export that fails, doctor without a GPU ---------------------
verdict_false()
{
	CHECK=false
	verdict counts counts "$T/none.json" "$T/none.out"
}
run_check noverdict FAIL "check.py gave no verdict \(exit 1\): \(no output\)" verdict_false PYTHON="$new"
export_missing()
{
	local why
	why=$(export_times nothere) && fail "export_times of a missing capture succeeded"
	result attach FAIL "$why"
}
run_check nocap FAIL "no capture nothere.cap was written" export_missing PYTHON="$new"
export_broken()
{
	local why
	echo "not a capture" >"$T/broken.cap"
	why=$(export_times broken) && fail "export_times of a broken capture succeeded"
	result attach FAIL "$why"
}
run_check badcap FAIL "cuscope export of broken.cap exited 2: cuscope: " export_broken PYTHON="$new" CUSCOPE="$REAL_CUSCOPE"
if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then
	run_check doctor FAIL "gpu is missing: no NVIDIA driver library" check_doctor PYTHON="$new" CUSCOPE="$REAL_CUSCOPE"
fi
exit 0
