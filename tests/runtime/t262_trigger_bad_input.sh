#!/usr/bin/env bash
# Bad trigger input gets one line and exit 2 before anything runs, on every verb that takes
# --trigger: a malformed expression (the line shows the grammar), bad --pre/--post/--dump-max/
# --dump-keep values, a --dump-dir that is a file, dump options without a trigger, run --detached
# with a trigger. No capture file
# and no dump directory appear, and the command is never started.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
mkdir -m 700 "$T/sess"
export CUSCOPE_SESSION_ROOT=$T/sess
grammar='gpu-idle>DUR \| range:\[DOMAIN/\]NAME>DUR'
ran="sh -c 'touch $T/ran'"

i=0
for expr in '' 'gpu-idle' 'gpu-idle>5' 'gpu-idle>5 ms' 'range:step' 'range:>5ms' 'range:step>p0*2' \
	'range:step>p99' 'range:step>p50*x' 'gap-explained:' 'gap-explained:magic' 'stall>5s' \
	'range:step>-5ms'; do
	i=$((i + 1))
	one_line "rec$i" 2 "record: --trigger '.*': .*; use $grammar" \
		"$CUSCOPE" record -o "$T/cap$i" --trigger "$expr" -- sh -c "touch $T/ran"
	[ -e "$T/cap$i" ] || [ -e "$T/cap$i.partial" ] && fail "record --trigger '$expr' left a capture file"
done
one_line run 2 "run: --trigger 'range:x>1parsec'.*; use $grammar" \
	"$CUSCOPE" run --trigger 'range:x>1parsec' -- sh -c "touch $T/ran"
one_line live 2 "cuscope: --trigger 'gpu-idle>'.*; use $grammar" "$CUSCOPE" --trigger 'gpu-idle>' -- true
one_line attach 2 "attach: --trigger 'range:'.*; use $grammar" "$CUSCOPE" attach --trigger 'range:' 1
one_line ssh 2 "attach: --trigger is not available with --ssh yet" \
	"$CUSCOPE" attach --ssh nohost.invalid --trigger 'range:step>1s'
one_line pre 2 "record: --pre needs a duration" "$CUSCOPE" record -o "$T/c" --trigger 'gpu-idle>1s' --pre 5 -- true
one_line post 2 "run: --post needs a duration" "$CUSCOPE" run --trigger 'gpu-idle>1s' --post -1s -- true
one_line max 2 "record: --dump-max needs a number" "$CUSCOPE" record -o "$T/c" --dump-max 0 -- true
one_line mb 2 "record: --dump-max-mb needs a size" "$CUSCOPE" record -o "$T/c" --dump-max-mb 1x -- true
one_line keep 2 "run: --dump-keep needs oldest or newest" "$CUSCOPE" run --dump-keep middle -- true
one_line detached 2 "run: --trigger needs the foreground" \
	"$CUSCOPE" run --detached --trigger 'range:step>1s' -- sh -c "touch $T/ran"
: >"$T/afile"
one_line dir 2 "record: --dump-dir $T/afile/d: " \
	"$CUSCOPE" record -o "$T/c" --trigger 'range:step>1s' --dump-dir "$T/afile/d" -- sh -c "touch $T/ran"
one_line dir2 2 "run: --dump-dir $T/afile: not a directory" \
	"$CUSCOPE" run --trigger 'range:step>1s' --dump-dir "$T/afile" -- sh -c "touch $T/ran"
one_line alone 2 "record: --dump-dir, --pre, .* go with --trigger EXPR" \
	"$CUSCOPE" record -o "$T/c" --dump-dir "$T/d" -- sh -c "touch $T/ran"
one_line alone2 2 "run: --dump-dir, --pre, .* go with --trigger EXPR" "$CUSCOPE" run --post 1s -- true
[ -e "$T/d" ] && fail "--dump-dir without a trigger made its directory"
[ -e "$T/c" ] && fail "a refused record left a capture"
[ -e "$T/ran" ] && fail "the command was started although an option was refused"
exit 0
