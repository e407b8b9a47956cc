#!/usr/bin/env bash
# Names come from the file that is mapped, not whatever now sits at its path: a library renamed
# over after the program loaded it (as a package upgrade does) still names the loaded copy's
# static hot function (replaced_v1_hot, read through /proc/self/map_files), never the new file's
# function at the same offset (replaced_v2_hot). As a user who cannot open map_files, the stale
# path is refused (inode and build-id differ): the function is then unnamed, never replaced_v2_hot;
# an identical copy renamed over it (another inode, the same build-id, as overlayfs shows a
# container's files) is accepted: replaced_v1_hot.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog replaced_lib
CC=${CC:-cc}
src=$(dirname "$0")/../progs/replaced_lib.c
for v in 1 2; do
	"$CC" -O1 -g -fPIC -shared -DREPLACED_LIB -DHOT=replaced_v${v}_hot -o "$T/v$v.so" "$src" 2>"$T/cc.err" ||
		fail "cannot build the library: $(head -c 300 "$T/cc.err")"
done

# run NEW [USER]: records the program on $T/dir/libreplaced.so, renames NEW over the library once
# it is loaded, and prints the hottest function in it.
run()
{
	local new=$1 as=()
	[ -n "${2:-}" ] && as=(runuser -u "$2" --)
	# The last run's "loaded" must not be taken for this one's (the library would be replaced first).
	rm -rf "$T/dir" "$T/cap" "$T/app.out" && mkdir "$T/dir" && cp "$T/v1.so" "$T/dir/libreplaced.so"
	chmod -R a+rwX "$T/dir" && chmod a+rx "$T"
	"${as[@]}" "$CUSCOPE" record -o "$T/dir/cap" -- "$PROGS/replaced_lib" "$T/dir/libreplaced.so" \
		"$T/dir/go" 1.5 >"$T/app.out" 2>"$T/app.err" </dev/null &
	local pid=$!
	BG_PIDS+=("$pid")
	wait_until 30 grep -q '^loaded' "$T/app.out" || fail "the library was not loaded: $(head -c 300 "$T/app.err")"
	cp "$new" "$T/dir/libreplaced.so.new" && mv "$T/dir/libreplaced.so.new" "$T/dir/libreplaced.so"
	touch "$T/dir/go"
	bg_wait "$pid" 60
	[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
	cs_stats "$T/dir/cap" "$T/stats.json"
	"$PYTHON" - "$T/stats.json" <<'PY' || fail "no hot rows in libreplaced.so: $(head -c 300 "$T/stats.json")"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["hot"] if r["module"] == "libreplaced.so"]
if not rows or max(r["samples"] for r in rows) < 20:
    sys.exit(1)
print(max(rows, key=lambda r: r["samples"])["function"])
PY
}

f=$(run "$T/v2.so") || exit 1
[ "$f" = replaced_v1_hot ] || fail "library replaced after load: hottest function is '$f', want replaced_v1_hot (the loaded copy)"

[ "$(id -u)" = 0 ] || exit 0
id cuscopeci >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin cuscopeci 2>/dev/null
id cuscopeci >/dev/null 2>&1 || exit 0
f=$(run "$T/v2.so" cuscopeci) || exit 1
case $f in
replaced_v2_hot) fail "unprivileged: the replaced file's function was reported (replaced_v2_hot)" ;;
replaced_v1_hot | libreplaced.so+0x*) ;;
*) fail "unprivileged: hottest function is '$f', want libreplaced.so+0x... (or replaced_v1_hot)" ;;
esac
f=$(run "$T/v1.so" cuscopeci) || exit 1
[ "$f" = replaced_v1_hot ] || fail "unprivileged, an identical copy renamed over: hottest function is '$f', want replaced_v1_hot (same build-id)"
exit 0
