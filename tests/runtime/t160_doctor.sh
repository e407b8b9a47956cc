#!/usr/bin/env bash
# cuscope doctor reports what this machine really offers and changes its report when a condition
# changes: perf events checked against the test's own perf_event_open (as root and as an
# unprivileged user), ptrace by user, python3 on PATH (none / older than 3.12 / 3.12+), CUPTI
# through CUSCOPE_CUPTI_PATH (missing, lacking a call, too old, new enough, crashing on load), the
# GPUs through a stand-in libnvidia-ml.so.1, the session root's permissions and the collector
# path. It always exits 0 with one line per check; only bad options are errors (exit 2, one line).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
CC=${CC:-cc}

# doctor NAME [ENV=VALUE...]: cuscope doctor --json with that environment into $T/NAME.json;
# fails unless it exits 0 with nothing on stderr and the JSON has every check once.
doctor()
{
	local name=$1 rc=0
	shift
	env "$@" "$CUSCOPE" doctor --json >"$T/$name.json" 2>"$T/$name.err" || rc=$?
	[ "$rc" = 0 ] || fail "$name: doctor exited $rc: $(head -c 300 "$T/$name.err")"
	[ -s "$T/$name.err" ] && fail "$name: doctor wrote to stderr: $(head -c 300 "$T/$name.err")"
	"$PYTHON" - "$T/$name.json" >"$T/check.out" 2>&1 <<'EOF' || fail "$name: $(head -c 400 "$T/check.out")"
import json, sys
keys = ["collector", "session_dir", "perf_events", "ptrace", "libunwind", "libpfm4",
        "python_perf", "cupti", "gpu", "gpu_profiling"]
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("JSON does not parse: %s" % e)
    sys.exit(1)
got = [c["check"] for c in j["checks"]]
bad = []
if got != keys:
    bad.append("checks %r, want %r" % (got, keys))
for c in j["checks"]:
    if c["status"] not in ("ok", "limited", "missing"):
        bad.append("%s: status %r" % (c["check"], c["status"]))
    if not c["detail"]:
        bad.append("%s: no detail" % c["check"])
    if c["status"] == "missing" and not c["fix"]:
        bad.append("%s: missing without a fix" % c["check"])
if bad:
    print("; ".join(bad))
    sys.exit(1)
EOF
}

# field NAME CHECK: "STATUS<TAB>DETAIL<TAB>FIX" of one check in $T/NAME.json.
field()
{
	"$PYTHON" -c '
import json, sys
for c in json.load(open(sys.argv[1]))["checks"]:
    if c["check"] == sys.argv[2]:
        print("%s\t%s\t%s" % (c["status"], c["detail"], c["fix"]))' "$T/$1.json" "$2"
}

# expect NAME CHECK STATUS REGEX: the check has STATUS and its detail+fix match REGEX.
expect()
{
	local line
	line=$(field "$1" "$2")
	[ "${line%%$'\t'*}" = "$3" ] || fail "$1: $2 is '${line%%$'\t'*}', want $3: $line"
	echo "$line" | grep -qE -- "$4" || fail "$1: $2 does not say /$4/: $line"
}

# --- the text report: one line per check, a fix under each that is not ok ---------------------
"$CUSCOPE" doctor >"$T/text.out" 2>"$T/text.err" || fail "doctor exited $?: $(head -c 300 "$T/text.err")"
[ -s "$T/text.err" ] && fail "doctor wrote to stderr: $(head -c 300 "$T/text.err")"
n=$(grep -cE '^(ok|limited|missing) +[A-Za-z]' "$T/text.out")
[ "$n" = 10 ] || fail "text report has $n status lines, want 10: $(head -n 14 "$T/text.out" | tr '\n' '|')"
lines=$(wc -l <"$T/text.out")
[ "$lines" -le 40 ] || fail "text report is $lines lines, not one screen"
awk '/^(limited|missing) / { want = 1; next } want && /^ +fix: / { want = 0; next }
     want && /^[a-z]/ { print "no fix under: " prev; bad = 1 } { prev = $0 } /^[a-z]/ { want = 0 }
     END { exit bad }' "$T/text.out" >"$T/awk.out" || fail "$(head -n 1 "$T/awk.out")"
grep -qE '^[0-9]+ ok, [0-9]+ limited, [0-9]+ missing$' "$T/text.out" || fail "no summary line"

# --- perf events: the test's own perf_event_open decides what the line must say ---------------
# Prints "SW SWUSER HW HWUSER", each 0 (opened) or the errno.
cat >"$T/perf_probe.py" <<'EOF'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def try_open(typ, config, user_only):
    attr = bytearray(128)
    struct.pack_into("IIQ", attr, 0, typ, 128, config)
    struct.pack_into("Q", attr, 40, 1 | ((1 << 5) | (1 << 6) if user_only else 0))
    buf = ctypes.create_string_buffer(bytes(attr), 128)
    fd = libc.syscall(298, buf, 0, -1, -1, 8)  # perf_event_open, PERF_FLAG_FD_CLOEXEC
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0
print(try_open(1, 1, 0), try_open(1, 1, 1), try_open(0, 0, 0), try_open(0, 0, 1))
EOF
# perf_expect NAME SW SWUSER HW HWUSER: the perf_events line of NAME agrees with the probe.
perf_expect()
{
	local name=$1 sw=$2 swu=$3 hw=$4 hwu=$5
	if [ "$swu" != 0 ]; then
		expect "$name" perf_events missing 'perf events refused'
	elif [ "$sw" = 0 ] && [ "$hw" = 0 ]; then
		expect "$name" perf_events ok 'software and hardware events'
	elif [ "$hwu" = 0 ]; then
		expect "$name" perf_events limited 'user space only'
	elif [ "$sw" = 0 ]; then
		expect "$name" perf_events limited '^limited.software events work; hardware counters .*refused'
	else
		expect "$name" perf_events limited 'software events work for user space only; hardware counters .*refused'
	fi
}
[ "$(uname -m)" = x86_64 ] || skip "perf probe numbers are x86_64's"
read -r sw swu hw hwu < <("$PYTHON" "$T/perf_probe.py") || fail "perf probe did not run"
doctor base
perf_expect base "$sw" "$swu" "$hw" "$hwu"
echo "perf as $(id -un): sw=$sw sw_user=$swu hw=$hw hw_user=$hwu"

# --- ptrace and perf as an unprivileged user ---------------------------------------------------
scope=0
[ -r /proc/sys/kernel/yama/ptrace_scope ] && scope=$(cat /proc/sys/kernel/yama/ptrace_scope)
if [ "$(id -u)" = 0 ]; then
	expect base ptrace ok 'into any running process'
	user=${CUSCOPE_TEST_USER:-cuscopeci}
	if id "$user" >/dev/null 2>&1 && runuser -u "$user" -- test -x "$CUSCOPE"; then
		chmod 755 "$T"
		runuser -u "$user" -- "$CUSCOPE" doctor --json >"$T/user.json" 2>"$T/user.err" ||
			fail "doctor as $user exited non-zero: $(head -c 300 "$T/user.err")"
		read -r usw uswu uhw uhwu < <(runuser -u "$user" -- "$PYTHON" "$T/perf_probe.py") ||
			fail "perf probe as $user did not run"
		echo "perf as $user: sw=$usw sw_user=$uswu hw=$uhw hw_user=$uhwu"
		perf_expect user "$usw" "$uswu" "$uhw" "$uhwu"
		if [ "$scope" = 0 ]; then
			expect user ptrace ok 'into your running processes'
		else
			expect user ptrace limited "ptrace_scope=$scope.*run --detached"
		fi
	else
		echo "no user $user (or it cannot run $CUSCOPE): unprivileged lines not checked" >&2
	fi
elif [ "$scope" = 0 ]; then
	expect base ptrace ok 'into your running processes'
fi

# --- python3 on PATH ---------------------------------------------------------------------------
mkdir -p "$T/nopy" "$T/oldpy" "$T/newpy"
doctor nopy PATH="$T/nopy"
expect nopy python_perf missing 'no python3 on PATH.*CPython 3.12'
old="" new=""
for p in /usr/bin/python3 /root/.pyenv/versions/3.1[01].*/bin/python3 /root/.pyenv/versions/3.[6-9].*/bin/python3; do
	[ -x "$p" ] || continue
	"$p" -c 'import sys; sys.exit(0 if sys.version_info < (3, 12) else 1)' 2>/dev/null && old=$p && break
done
for p in $(command -v python3.12 python3.13 2>/dev/null) /root/.pyenv/versions/3.1[2-9].*/bin/python3 /usr/bin/python3; do
	[ -x "$p" ] || continue
	"$p" -c 'import sys, sysconfig; sys.exit(0 if sys.version_info >= (3, 12) and sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE") else 1)' 2>/dev/null && new=$p && break
done
if [ -n "$old" ]; then
	ln -s "$old" "$T/oldpy/python3"
	doctor oldpy PATH="$T/oldpy"
	expect oldpy python_perf limited "python3 is cpython 3\.([0-9]|1[01])\..*need CPython 3.12"
else
	echo "no CPython older than 3.12 here: the 'too old' line not checked" >&2
fi
if [ -n "$new" ]; then
	ln -s "$new" "$T/newpy/python3"
	doctor newpy PATH="$T/newpy"
	expect newpy python_perf ok 'CPython 3\.(1[2-9]|[2-9][0-9]).* with perf trampolines'
else
	echo "no CPython >= 3.12 with perf trampolines here: the ok line not checked" >&2
fi

# --- CUPTI through CUSCOPE_CUPTI_PATH ------------------------------------------------------------
doctor cupti_none CUSCOPE_CUPTI_PATH="$T/no-such-libcupti.so"
expect cupti_none cupti missing "cannot load CUSCOPE_CUPTI_PATH=$T/no-such-libcupti.so.*CUSCOPE_CUPTI_PATH"
# fake_cupti NAME VERSION [OMIT] [CTOR_CRASH]: a stand-in libcupti with the calls the collector needs.
fake_cupti()
{
	local name=$1 version=$2 omit=${3:-} crash=${4:-0} f
	{
		echo '#include <stdint.h>'
		echo '#include <signal.h>'
		echo "int cuptiGetVersion(uint32_t *v) { *v = $version; return 0; }"
		for f in cuptiSubscribe cuptiEnableCallback cuptiActivityEnable cuptiActivityRegisterCallbacks \
			cuptiActivityFlushAll cuptiActivityGetNextRecord cuptiActivityGetNumDroppedRecords; do
			[ "$f" = "$omit" ] || echo "int $f(void) { return 0; }"
		done
		[ "$crash" = 1 ] && echo '__attribute__((constructor)) static void boom(void) { raise(SIGSEGV); }'
	} >"$T/$name.c"
	"$CC" -shared -fPIC -o "$T/$name.so" "$T/$name.c" 2>"$T/cc.err" || return 1
}
if fake_cupti cupti_old 120003 && fake_cupti cupti_new 990001 && fake_cupti cupti_lack 990001 cuptiActivityFlushAll &&
	fake_cupti cupti_crash 990001 "" 1; then
	doctor cupti_old CUSCOPE_CUPTI_PATH="$T/cupti_old.so"
	expect cupti_old cupti missing "cupti_old.so is CUPTI API 120003, older than the [0-9]+ this cuscope was built for"
	doctor cupti_new CUSCOPE_CUPTI_PATH="$T/cupti_new.so"
	expect cupti_new cupti ok "cupti_new.so, CUPTI API 990001"
	doctor cupti_lack CUSCOPE_CUPTI_PATH="$T/cupti_lack.so"
	expect cupti_lack cupti missing "lacks cuptiActivityFlushAll"
	doctor cupti_crash CUSCOPE_CUPTI_PATH="$T/cupti_crash.so"
	expect cupti_crash cupti missing "probe crashed"
	# The rest of the report is still there after a probe crashed.
	expect cupti_crash collector ok 'libcuscope.so'
else
	echo "no C compiler ($CC): stand-in libcupti checks not run: $(head -c 200 "$T/cc.err")" >&2
fi

# --- GPUs through a stand-in libnvidia-ml.so.1 (dlopen honours LD_LIBRARY_PATH) ----------------
mkdir -p "$T/nvml_ok" "$T/nvml_bad"
cat >"$T/nvml.c" <<'EOF'
#include <stdio.h>
#ifndef INIT_RC
#define INIT_RC 0
#endif
int nvmlInit_v2(void) { return INIT_RC; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned *n) { *n = 2; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { *d = (void *)(long)(i + 1); return 0; }
int nvmlDeviceGetName(void *d, char *name, unsigned len) { snprintf(name, len, "Stand-in GPU %ld", (long)d); return 0; }
int nvmlSystemGetDriverVersion(char *v, unsigned len) { snprintf(v, len, "999.1"); return 0; }
const char *nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }
EOF
if "$CC" -shared -fPIC -o "$T/nvml_ok/libnvidia-ml.so.1" "$T/nvml.c" 2>"$T/cc.err" &&
	"$CC" -shared -fPIC -DINIT_RC=9 -o "$T/nvml_bad/libnvidia-ml.so.1" "$T/nvml.c" 2>>"$T/cc.err"; then
	doctor nvml_ok LD_LIBRARY_PATH="$T/nvml_ok"
	expect nvml_ok gpu ok '2 GPUs \(0 Stand-in GPU 1, 1 Stand-in GPU 2\), driver 999.1'
	doctor nvml_bad LD_LIBRARY_PATH="$T/nvml_bad"
	expect nvml_bad gpu missing 'nvmlInit failed: Driver Not Loaded.*nvidia-smi'
else
	echo "no C compiler ($CC): stand-in NVML checks not run: $(head -c 200 "$T/cc.err")" >&2
fi
if [ ! -e /proc/driver/nvidia/params ]; then
	expect base gpu_profiling missing 'params absent'
	ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 ' || expect base gpu missing 'libnvidia-ml.so.1'
elif grep -q 'RmProfilingAdminOnly: 0' /proc/driver/nvidia/params; then
	expect base gpu_profiling ok 'RmProfilingAdminOnly: 0'
fi

# --- the session root ----------------------------------------------------------------------------
doctor sess_new CUSCOPE_SESSION_ROOT="$T/sessions"
expect sess_new session_dir ok "$T/sessions: made private \(0700\) at the first session"
[ -e "$T/sessions" ] && fail "doctor created the session root (it only looks)"
mkdir -m 0755 "$T/sessions"
doctor sess_open CUSCOPE_SESSION_ROOT="$T/sessions"
expect sess_open session_dir missing "is not a private directory of yours.*chmod 700"
chmod 700 "$T/sessions"
doctor sess_ok CUSCOPE_SESSION_ROOT="$T/sessions"
expect sess_ok session_dir ok "private \(0700\) and yours"
ln -s "$T/sessions" "$T/sessions-link"
doctor sess_link CUSCOPE_SESSION_ROOT="$T/sessions-link"
expect sess_link session_dir missing "not a directory, or a link"

# --- the collector -------------------------------------------------------------------------------
doctor coll CUSCOPE_COLLECTOR="$T/no-such-libcuscope.so"
expect coll collector missing "CUSCOPE_COLLECTOR=.*not a readable file"

# --- errors: one line, exit 2 --------------------------------------------------------------------
one_line badopt 2 'unknown option' "$CUSCOPE" doctor --bogus
one_line badarg 2 'takes no arguments' "$CUSCOPE" doctor extra
"$CUSCOPE" doctor --help | grep -q 'usage: cuscope doctor' || fail "doctor --help lacks its usage"
"$CUSCOPE" --help | grep -qE '^  doctor ' || fail "cuscope --help does not list doctor"

# --- sanitizers ----------------------------------------------------------------------------------
if [ -x "$CUSCOPE_ASAN" ]; then
	"$CUSCOPE_ASAN" doctor >"$T/asan.out" 2>"$T/asan.err" || fail "ASan doctor exited $?: $(head -c 300 "$T/asan.err")"
	no_sanitizer_report "$T/asan.err"
fi
exit 0
