#!/usr/bin/env bash
# Names of a stripped binary from separate debug data: a static function (in no dynamic symbol
# table) is named in stats' hot list when the binary carries MiniDebugInfo (.gnu_debugdata, made
# by the recipe in gdb's manual: nm / objcopy --only-keep-debug / xz / objcopy --add-section, then
# strip), or a .gnu_debuglink to a debug file in .debug/ beside it; a debug file whose CRC does
# not match the link is not used (the function stays "module+0x...").
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog strip_spin
for tool in objcopy strip nm xz comm; do
	command -v $tool >/dev/null 2>&1 || skip "no $tool (binutils, xz-utils)"
done
ldconfig -p 2>/dev/null | grep -q 'liblzma\.so\.5 ' || skip "no liblzma.so.5"

# hottest NAME: records $T/NAME and prints its hottest function in module NAME.
hottest()
{
	cs_record "$T/$1.cap" "$1" -- "$T/$1" 1.5
	[ "$RC" = 0 ] || fail "record of $1 exited $RC: $(head -c 300 "$T/$1.err")"
	grep -q "^done strip_spin" "$T/$1.out" || fail "$1 did not finish: $(head -c 200 "$T/$1.out")"
	cs_stats "$T/$1.cap" "$T/$1.json"
	"$PYTHON" - "$T/$1.json" "$1" <<'PY' || fail "no hot rows in $1"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["hot"] if r["module"] == sys.argv[2]]
if not rows or max(r["samples"] for r in rows) < 20:
    sys.exit(1)
print(max(rows, key=lambda r: r["samples"])["function"])
PY
}

# MiniDebugInfo, as gdb's manual makes it.
cd "$T" || fail "no $T"
cp "$PROGS/strip_spin" mini
nm -D mini --format=posix --defined-only | awk '{ print $1 }' | sort >dynsyms
nm mini --format=posix --defined-only | awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort >funcsyms
comm -13 dynsyms funcsyms >keep_symbols
grep -qx strip_local_hot keep_symbols || fail "recipe: strip_local_hot not kept: $(cat keep_symbols)"
objcopy --only-keep-debug mini debug
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep_symbols debug mini_debuginfo
strip --strip-all -R .comment mini
xz mini_debuginfo
objcopy --add-section .gnu_debugdata=mini_debuginfo.xz mini
nm mini >/dev/null 2>&1 && [ -n "$(nm mini 2>/dev/null)" ] && fail "mini still has a .symtab"

# .gnu_debuglink to .debug/linked.debug (CRC of that file recorded in the link).
cp "$PROGS/strip_spin" linked
objcopy --only-keep-debug linked linked.debug
strip --strip-all linked
objcopy --add-gnu-debuglink=linked.debug linked
mkdir .debug && mv linked.debug .debug/

# The same, but the debug file changed after linking: its CRC no longer matches.
cp "$PROGS/strip_spin" badcrc
objcopy --only-keep-debug badcrc badcrc.debug
strip --strip-all badcrc
objcopy --add-gnu-debuglink=badcrc.debug badcrc
printf 'x' >>badcrc.debug

f=$(hottest mini) || exit 1
[ "$f" = strip_local_hot ] || fail "MiniDebugInfo: hottest function of mini is '$f', want strip_local_hot"
f=$(hottest linked) || exit 1
[ "$f" = strip_local_hot ] || fail "debuglink: hottest function of linked is '$f', want strip_local_hot"
f=$(hottest badcrc) || exit 1
case $f in
badcrc+0x*) ;;
*) fail "a debug file with the wrong CRC was used: hottest function of badcrc is '$f', want badcrc+0x..." ;;
esac
exit 0
