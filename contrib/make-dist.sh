#!/usr/bin/env bash
# `make dist`: a relocatable cuscope for GPU nodes without root.
# usage: contrib/make-dist.sh BUILD DEST
# Copies BUILD/bin/cuscope, BUILD/lib/cuscope/libcuscope.so and BUILD/share/man into DEST, then
# every shared library `ldd` lists for them except glibc's own (libc, libm, libpthread, libdl,
# librt, ld-linux, ...) into DEST/lib, where the binary's $ORIGIN/../lib run path finds them.
set -euo pipefail
[ $# = 2 ] || {
	echo "usage: $0 BUILD DEST" >&2
	exit 2
}
BUILD=$1
DEST=$2
BIN=$BUILD/bin/cuscope
LIB=$BUILD/lib/cuscope/libcuscope.so
for f in "$BIN" "$LIB"; do
	[ -f "$f" ] || {
		echo "make-dist: $f missing (run make)" >&2
		exit 1
	}
done

rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib/cuscope" "$DEST/share"
cp "$BIN" "$DEST/bin/cuscope"
cp "$LIB" "$DEST/lib/cuscope/libcuscope.so"
# The Python GC hook launch mode puts on PYTHONPATH, found beside the collector.
[ -d "$BUILD/lib/cuscope/python" ] && cp -r "$BUILD/lib/cuscope/python" "$DEST/lib/cuscope/"
if [ -d "$BUILD/share/man" ]; then
	cp -r "$BUILD/share/man" "$DEST/share/"
elif [ -f contrib/cuscope.1 ]; then
	mkdir -p "$DEST/share/man/man1"
	cp contrib/cuscope.1 "$DEST/share/man/man1/"
fi
[ -d themes ] && ls themes/*.theme >/dev/null 2>&1 && mkdir -p "$DEST/share/cuscope/themes" &&
	cp themes/*.theme "$DEST/share/cuscope/themes/"

# glibc's libraries are always on the target and must match its kernel and loader: never copy.
is_glibc()
{
	case $(basename "$1") in
	libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*.so.* | \
		libresolv.so.* | libutil.so.* | libanl.so.* | libnsl.so.* | libmvec.so.* | linux-vdso.so.*)
		return 0
		;;
	esac
	return 1
}

# The collector loads libunwind with dlopen when sampling starts (ldd does not list it).
# awk reads to the end (no early exit): ldconfig killed by SIGPIPE failed the pipeline (pipefail),
# and `make dist` with it, now and then.
UNWIND=$(ldconfig -p | awk '$1 == "libunwind-x86_64.so.8" && !found { found = $NF } END { print found }')
[ -n "$UNWIND" ] || echo "make-dist: warning: libunwind-x86_64.so.8 not found: no CPU sampling" >&2
for f in "$BIN" "$LIB" ${UNWIND:+"$UNWIND"}; do
	[ "$f" = "${UNWIND:-}" ] && echo "$f"
	ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u | while read -r so; do
	is_glibc "$so" && continue
	echo "make-dist: bundling $so"
	cp -L "$so" "$DEST/lib/"
done

runpath=$(readelf -d "$DEST/bin/cuscope" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
# shellcheck disable=SC2016 # a literal $ORIGIN
case $runpath in
*'$ORIGIN/../lib'*) echo "make-dist: bin/cuscope run path: $runpath" ;;
*)
	echo "make-dist: bin/cuscope lacks the \$ORIGIN/../lib run path (has '$runpath'): the bundled libraries will not be found" >&2
	exit 1
	;;
esac

# DT_RUNPATH (unlike DT_RPATH) does not apply to the libraries' own dependencies: say if a
# bundled library still resolves from the system. ldd prints the run path as found
# ($ORIGIN/../lib, absolute); DEST may be relative: both are compared resolved.
dest_real=$(cd "$DEST" && pwd -P)
for so in "$DEST"/lib/*.so*; do
	[ -f "$so" ] || continue
	name=$(basename "$so")
	where=$(ldd "$DEST/bin/cuscope" | awk -v n="$name" '$1 == n { print $3 }')
	[ -n "$where" ] && where=$(readlink -f "$where")
	case $where in
	"" | "$dest_real"/*) ;;
	*) echo "make-dist: warning: $name resolves to $where, not the bundled copy (DT_RUNPATH does not cover indirect dependencies; link with -Wl,--disable-new-dtags for DT_RPATH)" >&2 ;;
	esac
done

echo "make-dist: $DEST:"
(cd "$DEST" && find . -type f | sort | sed 's/^\.\//  /')
for f in "$DEST/bin/cuscope" "$DEST/lib/cuscope/libcuscope.so"; do
	echo "ldd $f:"
	ldd "$f" | sed 's/^/  /'
	if ldd "$f" | grep -q 'not found'; then
		echo "make-dist: $f has unresolved libraries" >&2
		exit 1
	fi
done
