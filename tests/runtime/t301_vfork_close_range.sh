#!/usr/bin/env bash
# vfork children that close every fd before exec (close_range, close, dup2: what Python's
# subprocess and posix_spawn do) share the program's memory but not its fd table: the collector
# must not take their closes for the program giving its numbers up (it then dropped its viewer
# connection and listening socket unclosed, made new ones and replayed: 20 children leaked 40 fds).
# The program's open fds stay as many after 20 children as after the first, every mark arrives,
# nothing is lost, and the program's exit code comes through.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog vfork_closer

cs_record "$T/cap" app -- "$PROGS/vfork_closer" 20
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
marks = app("marks")
r = row("vfork_closer.mark", "", "Mark")
if r["count"] != marks:
    fail("capture holds %d marks, the program made %d (the stream lost after a vfork child closed fds?)" % (r["count"], marks))
no_losses()
first, last = app("fds_first"), app("fds_last")
if last > first + 2:
    fail("the program had %d open fds after the first vfork child and %d after the last: the collector's leaked" % (first, last))
PY
exit 0
