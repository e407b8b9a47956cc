#!/usr/bin/env bash
# What a short-lived child costs under `cuscope record`: a shell loop of N (default 1000)
# /bin/true, plain and recorded, ROUNDS (default 5) interleaved rounds; prints medians of wall
# time and of user+sys CPU (the whole tree: shell, children, and for record the recorder), per
# child, and the recorded minus plain difference. Prints numbers; passes or fails nothing.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}
CLI=$PWD/$B/bin/cuscope
N=${N:-1000}
ROUNDS=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
loop="i=0; while [ \$i -lt $N ]; do /bin/true; i=\$((i + 1)); done"
echo "method: sh -c 'loop of $N /bin/true', $ROUNDS interleaved rounds, plain then under cuscope record"
for _ in $(seq "$ROUNDS"); do
	/usr/bin/time -f "%e %U %S" -o "$tmp/t" sh -c "$loop"
	awk '{print $1 >> "'"$tmp/plain.wall"'"; print $2 + $3 >> "'"$tmp/plain.cpu"'"}' "$tmp/t"
	/usr/bin/time -f "%e %U %S" -o "$tmp/t" "$CLI" record -o "$tmp/c.cap" -- sh -c "$loop" >/dev/null 2>"$tmp/err"
	awk '{print $1 >> "'"$tmp/rec.wall"'"; print $2 + $3 >> "'"$tmp/rec.cpu"'"}' "$tmp/t"
done
for k in wall cpu; do
	p=$(median <"$tmp/plain.$k")
	r=$(median <"$tmp/rec.$k")
	echo "$k: plain median $p s (rounds: $(tr '\n' ' ' <"$tmp/plain.$k")); record median $r s (rounds: $(tr '\n' ' ' <"$tmp/rec.$k"))"
	awk -v p="$p" -v r="$r" -v n="$N" -v k="$k" 'BEGIN {printf "%s per child: plain %.3f ms, record %.3f ms, added %.3f ms\n", k, p * 1000 / n, r * 1000 / n, (r - p) * 1000 / n}'
done
n=$("$CLI" info "$tmp/c.cap" 2>/dev/null | grep -c '  pid .* /bin/true')
echo "last capture holds $n of $N /bin/true processes"
