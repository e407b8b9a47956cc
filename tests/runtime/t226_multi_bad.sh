#!/usr/bin/env bash
# Bad input among several captures is one line and exit 2, before anything is read or written:
# a file that is not a capture, a missing file, a directory, for stats, export and view; export
# then leaves no output file and keeps one that was there. No verb takes zero files.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

cap=$ROOT/tests/data/capture_wire2.cap
echo "not a capture" >"$T/junk.txt"
mkdir "$T/dir"

for verb in stats export view; do
	one_line "$verb-junk" 2 "junk.txt is not a cuscope capture file" "$CUSCOPE" $verb "$cap" "$T/junk.txt"
	[ -s "$T/$verb-junk.out" ] && fail "$verb with a bad file printed: $(head -c 200 "$T/$verb-junk.out")"
	one_line "$verb-junk-first" 2 "junk.txt is not a cuscope capture file" "$CUSCOPE" $verb "$T/junk.txt" "$cap"
	one_line "$verb-missing" 2 "cannot open .*/missing.cuscope" "$CUSCOPE" $verb "$cap" "$T/missing.cuscope"
	one_line "$verb-dir" 2 "is a directory, not a capture file" "$CUSCOPE" $verb "$cap" "$T/dir"
	one_line "$verb-none" 2 "$verb: expected one or more capture files" "$CUSCOPE" $verb
done

# export writes nothing, and a file already there stays as it was.
one_line export-new 2 "junk.txt is not a cuscope capture file" "$CUSCOPE" export -o "$T/new.json" "$cap" "$cap" "$T/junk.txt"
[ -e "$T/new.json" ] && fail "export with a bad capture created its output"
ls "$T" | grep -q partial && fail "export left a partial file: $(ls "$T" | tr '\n' ' ')"
echo "kept" >"$T/old.json"
one_line export-old 2 "junk.txt is not a cuscope capture file" "$CUSCOPE" export -o "$T/old.json" "$cap" "$T/junk.txt"
[ "$(cat "$T/old.json")" = kept ] || fail "export with a bad capture changed the existing output"
exit 0
