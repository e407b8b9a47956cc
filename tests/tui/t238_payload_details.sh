#!/usr/bin/env bash
# cuscope view: the details of an NCCL range (tests/progs/nvtx_payload, NVTX extended payloads)
# show its decoded payload on one args line, the enum value by its name; a range whose payload
# could not be decoded has no args line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_payload

cs_record "$T/cap" app -- "$PROGS/nvtx_payload"
[ "$RC" = 7 ] || fail "record exited $RC, want the program's 7"
tm_run_cuscope view "$T/cap"
tm_wait 'NVTX ranges' 15 "view: NVTX panel"

tm_keys / n c c l C o m m I n i t Enter
sleep 0.5
tm_keys Enter
tm_wait 'NVTX range +ncclCommInitRank' 5 "details of the found range"
tm_screen_has 'args +newcomm=77 nranks=8 myrank=3 cudaDev=-1' ||
	fail "details lack the payload: $(tm_screen | grep -A8 'event details' | tr -s ' ' | tr '\n' '|')"
tm_keys Escape
sleep 0.3

tm_keys / n c c l A l l R Enter
sleep 0.5
tm_keys Enter
tm_wait 'NVTX range +ncclAllReduce' 5 "details of an all-reduce"
# Whichever of the three the search lands on: its own fields, the op by name.
tm_screen_has 'args +comm=(4096 bytes=4096 root=0 op=Sum scale=0|4097 bytes=8192 root=-1 op=Prod scale=0.5|4098 bytes=16384 root=-2 op=Max scale=1)( |$)' ||
	fail "details lack the all-reduce's payload: $(tm_screen | grep -A8 'event details' | tr -s ' ' | tr '\n' '|')"
tm_keys Escape
sleep 0.3

tm_keys / n c c l B r o a d Enter
sleep 0.5
tm_keys Enter
tm_wait 'NVTX range +ncclBroadcast' 5 "details of a broadcast"
tm_screen_has 'args ' && fail "an undecodable payload shows args: $(tm_screen | grep -A8 'event details' | tr -s ' ' | tr '\n' '|')"
tm_keys Escape
tm_keys q
tm_wait_exit 0 10
exit 0
