# shellcheck shell=bash
# For the attach --ssh tests: a private sshd on 127.0.0.1 (its own config, host key, port, pid
# file and authorized key under $T; never the system service) and an ssh client configuration
# with two "hosts", nodeA and nodeB, that reach it as root with their own session roots
# ($T/roots/nodeA, $T/roots/nodeB: host identity comes from the --ssh name). `ssh` on PATH is a
# wrapper that adds -F and logs its arguments to $T/ssh.args. SSHD_SETENV_nodeA / SSHD_SETENV_nodeB
# (NAME=VALUE, set before sshd_start) add a test-only variable to that host's remote environment
# (sshd accepts CUSCOPE_TEST_REALTIME_SHIFT_NS). Source after lib.sh.

SSHD_BIN=${SSHD_BIN:-/usr/sbin/sshd}
SSHD_MADE_RUN_DIR=0

sshd_cleanup()
{
	[ -n "${SSHD_PID:-}" ] && kill -TERM "$SSHD_PID" 2>/dev/null
	[ "$SSHD_MADE_RUN_DIR" = 1 ] && rmdir /run/sshd 2>/dev/null
	lib_cleanup
}

# Starts sshd (skips with one line without root, sshd or ssh) and writes the client side.
sshd_start()
{
	[ "$(id -u)" = 0 ] || skip "SKIP: needs root (a private sshd that logs in as root)"
	[ -x "$SSHD_BIN" ] || skip "SKIP: sshd not installed (apt-get install openssh-server)"
	if ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
		skip "SKIP: ssh not installed"
	fi
	trap sshd_cleanup EXIT
	# sshd's privilege separation needs its empty directory; made (and removed) only if missing.
	if [ ! -d /run/sshd ]; then
		mkdir -m 0755 /run/sshd && SSHD_MADE_RUN_DIR=1
	fi
	local d=$T/sshd
	mkdir -m 700 "$d" "$T/roots" "$T/bin" || fail "cannot make the test's directories"
	mkdir -m 700 "$T/roots/nodeA" "$T/roots/nodeB" || fail "cannot make the session roots"
	ssh-keygen -q -t ed25519 -N '' -f "$d/host_key" || fail "ssh-keygen (host) failed"
	ssh-keygen -q -t ed25519 -N '' -f "$d/id" || fail "ssh-keygen (user) failed"
	cp "$d/id.pub" "$d/authorized_keys"
	SSHD_PORT=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$d/sshd_config" <<CFG
Port $SSHD_PORT
ListenAddress 127.0.0.1
HostKey $d/host_key
PidFile $d/sshd.pid
AuthorizedKeysFile $d/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
AcceptEnv CUSCOPE_SESSION_ROOT CUSCOPE_TEST_REALTIME_SHIFT_NS
CFG
	"$SSHD_BIN" -D -e -f "$d/sshd_config" 2>"$T/sshd.log" &
	SSHD_PID=$!
	BG_PIDS+=("$SSHD_PID")
	local h extra
	: >"$T/ssh_config"
	for h in nodeA nodeB; do
		extra=SSHD_SETENV_$h
		extra=${!extra:-}
		cat >>"$T/ssh_config" <<CFG
Host $h
  HostName 127.0.0.1
  Port $SSHD_PORT
  User root
  IdentityFile $d/id
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  LogLevel ERROR
  SetEnv CUSCOPE_SESSION_ROOT=$T/roots/$h${extra:+ $extra}
CFG
	done
	cat >"$T/bin/ssh" <<WRAP
#!/bin/sh
echo "\$*" >>"$T/ssh.args"
exec "$(command -v ssh)" -F "$T/ssh_config" "\$@"
WRAP
	chmod +x "$T/bin/ssh"
	PATH=$T/bin:$PATH
	export PATH
	if ! wait_until 10 ssh -o BatchMode=yes nodeA true 2>"$T/ssh-probe.err"; then
		# A root account sshd refuses by policy (locked, no shell) is this machine's, not ours.
		if grep -qE 'account is locked|not allowed because|shell .* does not exist' "$T/sshd.log"; then
			skip "SKIP: sshd refuses root here: $(grep -m1 -E 'locked|not allowed|shell' "$T/sshd.log")"
		fi
		fail "the private sshd does not answer: $(tail -3 "$T/sshd.log") $(cat "$T/ssh-probe.err")"
	fi
	: >"$T/ssh.args"
}

# arm ROOT NAME -- CMD...: `cuscope run --detached` with CUSCOPE_SESSION_ROOT=ROOT; sets ARMED_PID
# (killed at the end of the test).
arm()
{
	local root=$1 name=$2
	shift 3
	CUSCOPE_SESSION_ROOT=$root "$CUSCOPE" run --detached -- "$@" >"$T/$name.arm" 2>&1 ||
		fail "run --detached failed: $(cat "$T/$name.arm")"
	ARMED_PID=$(sed -n 's/^pid \([0-9]*\) armed.*/\1/p' "$T/$name.arm")
	[ -n "$ARMED_PID" ] || fail "no pid from run --detached: $(cat "$T/$name.arm")"
	BG_PIDS+=("$ARMED_PID")
}
