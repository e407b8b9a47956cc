#!/usr/bin/env bash
# Root recording another user's Python process reads its versions (torch/version.py, the
# *.dist-info names beside its mapped modules) only as that user could: in a site-packages
# folder that user cannot list, or from a version.py that user cannot read, root learns nothing,
# so nothing root-only reaches the capture; readable ones are still reported.
# Needs root; the target runs as an unprivileged user.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ "$(id -u)" = 0 ] || skip "needs root (plays root attaching to another user's process)"
command -v python3 >/dev/null || skip "no python3"
user=${CUSCOPE_TEST_USER:-cuscopeci}
id "$user" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$user" ||
	skip "cannot create user $user"
uid=$(id -u "$user")
as_user() { setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups env -u XDG_RUNTIME_DIR HOME=/tmp "$@"; }
as_user test -x "$CUSCOPE" || skip "$CUSCOPE is not reachable by $user"
U=$(mktemp -d /tmp/cuscope-t091-user.XXXXXX)
chmod 0755 "$U"
chown "$user" "$U"
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup_user()
{
	rm -rf "$U" "/tmp/cuscope-$uid"
	lib_cleanup
}
trap cleanup_user EXIT

# run NAME: the user's python maps $U/NAME/site-packages/torch/_C.so; root records it 3 s.
run()
{
	local site=$U/$1/lib/python3/site-packages
	as_user python3 -c '
import mmap, os, sys, time
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print("pid %d" % os.getpid(), flush=True)
time.sleep(8)
' "$site/torch/_C.so" >"$U/$1.out" 2>&1 &
	BG_PIDS+=("$!")
	wait_until 10 grep -q '^pid ' "$U/$1.out" || fail "$1: the target did not start: $(cat "$U/$1.out")"
	local app
	app=$(sed -n 's/^pid //p' "$U/$1.out")
	BG_PIDS+=("$app")
	grep -q "$site/torch/_C.so" "/proc/$app/maps" || fail "$1: the target does not map _C.so"
	timeout 60 "$CUSCOPE" attach --record -o "$T/$1.cap" --duration 3 "$app" >"$T/$1.out" 2>"$T/$1.err"
	local rc=$?
	[ "$rc" = 0 ] || fail "$1: attach exited $rc: $(tr '\n' '|' <"$T/$1.err")"
	"$CUSCOPE" info "$T/$1.cap" >"$T/$1.info" 2>&1 || fail "$1: info failed: $(head -c 300 "$T/$1.info")"
	kill -KILL "$app" 2>/dev/null
}

# make NAME VERSION PACKAGE: a site-packages folder of the user's own.
make_site()
{
	local site=$U/$1/lib/python3/site-packages
	as_user mkdir -p "$site/torch" "$site/$3.dist-info" || fail "could not make $site"
	as_user sh -c "echo \"__version__ = '$2'\" >'$site/torch/version.py' && head -c 8192 /dev/zero >'$site/torch/_C.so'" ||
		fail "could not fill $site"
}

make_site open 1.2.3 visible-1.0
run open
grep -q "torch_version=1.2.3" "$T/open.info" || fail "a readable version.py was not reported: $(grep -E 'python|torch' "$T/open.info" | tr '\n' '|')"
grep -q "python_package=visible==1.0" "$T/open.info" || fail "a listable site-packages was not reported"

# The user cannot list the folder nor read version.py: neither may root on their behalf.
make_site closed 6.6.6 secret-9.9
chmod 0311 "$U/closed/lib/python3/site-packages"
chmod 0000 "$U/closed/lib/python3/site-packages/torch/version.py"
run closed
grep -qF "torch_version=6.6.6" "$T/closed.info" && fail "root read a version.py its user cannot read: $(grep -F 6.6.6 "$T/closed.info")"
grep -q "secret" "$T/closed.info" && fail "root listed a folder its user cannot list: $(grep secret "$T/closed.info")"
exit 0
