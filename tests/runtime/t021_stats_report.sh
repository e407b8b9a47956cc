#!/usr/bin/env bash
# stats --report: JSON holds exactly the selected sections (all without --report) with the same
# rows as the full output; table/CSV print only their headings; an unknown name is one line, exit 2.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_domains

cs_record "$T/cap" app -- "$PROGS/nvtx_domains"
[ "$RC" = 0 ] || fail "record exited $RC"
cs_stats "$T/cap" "$T/all.json"
for rep in nvtx kernels,api nvtx,threads,processes,losses,kernels,memcpy,memset,sync,gpus,streams,api losses,nvtx cost,nvtx hot,hot-inclusive ranks,nvtx triggers,nvtx; do
	rc=0
	"$CUSCOPE" stats --format=json --report="$rep" "$T/cap" >"$T/r.json" 2>"$T/r.err" || rc=$?
	[ "$rc" = 0 ] || fail "stats --report=$rep exited $rc: $(head -c 200 "$T/r.err")"
	"$PYTHON" - "$T/all.json" "$T/r.json" "$rep" <<'PY' || exit 1
import json, sys
A = json.load(open(sys.argv[1])); R = json.load(open(sys.argv[2])); want = sys.argv[3].split(",")
if sorted(R) != sorted(set(want)):
    print("--report=%s: JSON sections %r" % (sys.argv[3], sorted(R))); sys.exit(1)
for s in want:
    if R[s] != A[s]:
        print("--report=%s: section %s differs from the full output" % (sys.argv[3], s)); sys.exit(1)
if len(A) != 19:
    print("full JSON has %d sections, want 19: %r" % (len(A), sorted(A))); sys.exit(1)
PY
done
"$CUSCOPE" stats --report=nvtx,api "$T/cap" >"$T/t.out" 2>/dev/null || fail "table --report failed"
heads=$(grep -c '^== ' "$T/t.out")
[ "$heads" = 2 ] || fail "table --report=nvtx,api printed $heads headings, want 2"
grep -q '^== nvtx ==' "$T/t.out" && grep -q '^== api ==' "$T/t.out" || fail "table headings wrong: $(grep '^==' "$T/t.out" | tr '\n' '|')"
"$CUSCOPE" stats --format=csv -r losses "$T/cap" >"$T/c.out" 2>/dev/null || fail "csv -r failed"
[ "$(grep -c '^# ' "$T/c.out")" = 1 ] || fail "csv -r losses printed $(grep -c '^# ' "$T/c.out") headings"
for bad in bogus nvtx,bogus "" nvtx,,api; do
	rc=0
	"$CUSCOPE" stats --report="$bad" "$T/cap" >"$T/b.out" 2>"$T/b.err" || rc=$?
	[ "$rc" = 2 ] || fail "stats --report='$bad' exited $rc, want 2"
	one_line_error "$T/b.err" "stats --report='$bad'"
	[ -s "$T/b.out" ] && fail "stats --report='$bad' printed output"
done
exit 0
