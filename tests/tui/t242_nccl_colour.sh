#!/usr/bin/env bash
# NCCL kernels are coloured as communication: two ranks under one shell launch 5 kernels each through
# the stand-in libcupti, rank 0 NCCL-named ones (ncclDevKernel_AllReduce_Sum_f32_RING_LL), rank 1
# gemm_kernel. In `view` with a theme that paints every range/kernel slot green and `comm` magenta,
# rank 0's stream row has magenta cells and rank 1's none (checked through tmux capture-pane -e);
# the theme's comm key is known (no warning). Both as zoomed-out cells (kernels folded into cells, as
# the whole capture shows at first) and as a box (find zooms onto the first NCCL kernel).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/../runtime/fake_cupti.sh"
need_fake_cupti
need_prog fake_nccl_ranks

NR=$PROGS/fake_nccl_ranks
mkfifo "$T/f0" "$T/f1" || fail "mkfifo failed"
# Each rank is its own peer (one FIFO, written then read): no barrier with the other.
FAKE_CUPTI_FIRST_CALL_MS=150 CUSCOPE_CUPTI_PATH=$FAKE_CUPTI cs_record "$T/cap" app -- /bin/sh -c \
	"RANK=0 '$NR' 5 '$T/f0' '$T/f0' & RANK=1 '$NR' 5 '$T/f1' '$T/f1' gemm_kernel & wait"
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"

{
	echo "name = commtest"
	for i in 0 1 2 3 4 5; do echo "range$i = black on green"; done
	echo "fold = yellow on default"
	echo "comm = black on magenta"
} >"$T/comm.theme"

# magenta_rows: "RANK:yes|no" per rank for its GPU stream rows (a magenta background anywhere).
magenta_rows()
{
	tm capture-pane -e -p -t t | "$PYTHON" -c '
import re, sys
def magenta_bg(params):
    ps = [int(p) if p.isdigit() else -1 for p in re.split("[;:]", params)] if params else [0]
    i = 0
    while i < len(ps):
        p = ps[i]
        if p in (45, 105):
            return True
        if p in (38, 48) and i + 1 < len(ps) and ps[i + 1] == 5:
            if p == 48 and i + 2 < len(ps) and ps[i + 2] in (5, 13):
                return True
            i += 3
            continue
        if p in (38, 48) and i + 1 < len(ps) and ps[i + 1] == 2:
            i += 5
            continue
        i += 1
    return False
rank, seen = None, {}
for raw in sys.stdin.read().splitlines():
    text = re.sub(r"\x1b\[[0-9;:]*[A-Za-z]", "", raw)
    m = re.search(r"rank (\d+)  fake_nccl_ranks [0-9]+", text)
    if m:
        rank = m.group(1)
        continue
    if rank is not None and re.match(r"\s+GPU[0-9]+ (s[0-9]+|default)", text):
        hit = any(magenta_bg(p) for p in re.findall(r"\x1b\[([0-9;:]*)m", raw))
        seen[rank] = seen.get(rank, False) or hit
print(" ".join("%s:%s" % (r, "yes" if seen[r] else "no") for r in sorted(seen)))'
}

TM_HEIGHT=50 tm_run_cuscope view --theme "$T/comm.theme" "$T/cap"
tm_wait 'rank 1  fake_nccl_ranks [0-9]' 15 "view: rank 1 header"
tm_wait 'GPU[0-9]+ (s[0-9]+|default)' 5 "view: a GPU stream row"
sleep 0.5
tm_screen_has 'unknown key|ignored' && fail "the theme's comm key was not known: $(tm_screen | tail -n 1)"
got=$(magenta_rows)
[ "$got" = "0:yes 1:no" ] || fail "zoomed out: want rank 0's stream row magenta (comm) and rank 1's not, got '$got'; screen: $(tm_screen | head -n 30 | tr -s ' ' | tr '\n' '|')"

# Find zooms onto the first NCCL kernel: a box wide enough for its name, magenta too.
tm_keys / n c c l D e v Enter
tm_wait '^ +GPU[0-9]+ (s[0-9]+|default) +│.*ncclDevKernel' 5 "find: the NCCL kernel's box with its name"
got=$(magenta_rows)
case $got in
"0:yes"*) ;;
*) fail "zoomed in: want rank 0's kernel box magenta (comm), got '$got'; screen: $(tm_screen | head -n 30 | tr -s ' ' | tr '\n' '|')" ;;
esac
tm_keys q
tm_wait_exit 0 10
exit 0
