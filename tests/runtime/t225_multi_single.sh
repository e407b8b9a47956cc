#!/usr/bin/env bash
# One capture reads exactly as before several could be read together: `stats` (json, table, csv)
# and `export` (chrome, perfetto) of the committed captures print what cuscope printed for them at
# b81fec5, by sha256 (tests/data/single_capture.sha256). A change to stats or export output that is
# meant regenerates the list: CUSCOPE_REGEN=1 tests/runtime/t225_multi_single.sh (then review it).
# Also a fresh capture with a planted clock anchor offset reads alone as it was recorded: nothing
# is moved, and neither host nor capture is added to its processes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_at

LIST=$ROOT/tests/data/single_capture.sha256

# outputs FILE: "FILE VERB SHA256" for each verb, as in $LIST.
outputs()
{
	local f=$1 cap=$ROOT/tests/data/$1
	echo "$f stats-json $("$CUSCOPE" stats --format=json "$cap" | sha256sum | cut -c1-64)"
	echo "$f stats-table $("$CUSCOPE" stats "$cap" | sha256sum | cut -c1-64)"
	echo "$f stats-csv $("$CUSCOPE" stats --format=csv "$cap" | sha256sum | cut -c1-64)"
	"$CUSCOPE" export -o "$T/x.json" "$cap" || fail "export $f exited $?"
	echo "$f export-chrome $(sha256sum <"$T/x.json" | cut -c1-64)"
	"$CUSCOPE" export --format=perfetto -o "$T/x.pb" "$cap" || fail "export --format=perfetto $f exited $?"
	echo "$f export-perfetto $(sha256sum <"$T/x.pb" | cut -c1-64)"
}

files=$(grep -v '^#' "$LIST" | cut -d' ' -f1 | sort -u)
if [ "${CUSCOPE_REGEN:-0}" = 1 ]; then
	{
		grep '^#' "$LIST"
		for f in $files; do outputs "$f"; done
	} >"$T/new" || fail "cannot regenerate"
	cp "$T/new" "$LIST"
	echo "regenerated $LIST"
fi
for f in $files; do
	outputs "$f" >"$T/got.$f" || exit 1
	while read -r name verb sum; do
		want=$(grep "^$name $verb " "$LIST" | cut -d' ' -f3)
		[ "$sum" = "$want" ] || fail "$name: $verb output changed (sha256 $sum, want $want)"
	done <"$T/got.$f"
done

# A fresh capture whose anchor is planted 5 s off: alone, its times are its own.
at=$(($(date +%s%N) + 300000000))
CUSCOPE_TEST_REALTIME_SHIFT_NS=5000000000 timeout 60 "$CUSCOPE" record -o "$T/a.cuscope" -- "$PROGS/nvtx_at" "$at" \
	>"$T/a.out" 2>"$T/a.err" </dev/null || fail "record exited $?: $(head -c 300 "$T/a.err")"
timeout 60 "$CUSCOPE" export -o "$T/a.json" "$T/a.cuscope" 2>"$T/e.err" || fail "export exited $?"
timeout 60 "$CUSCOPE" stats --format=json "$T/a.cuscope" >"$T/a.stats" 2>>"$T/e.err" || fail "stats exited $?"
[ -s "$T/e.err" ] && fail "a single capture gave warnings: $(head -c 300 "$T/e.err")"
"$PYTHON" - "$T/a.json" "$T/a.stats" "$T/a.cuscope" <<'PY' || exit 1
import json, sys
def fail(msg):
    print(msg)
    sys.exit(1)
J = json.load(open(sys.argv[1]))
S = json.load(open(sys.argv[2]))
for p in S["processes"]:
    if "host" in p or "capture" in p:
        fail("one capture's processes gained host/capture: %r" % p)
names = [e["args"]["name"] for e in J["traceEvents"] if e.get("name") == "process_name"]
if any(n.endswith(")") for n in names):
    fail("one capture's process names gained a host: %r" % names)
PY
exit 0
