"""Checks a `cuscope export --format=perfetto` trace against the JSON export of the same capture.

usage: perfetto_check.py TRACE JSON SUMMARY_OUT

Parses TRACE with perfetto_trace_pb2.Trace (the official generated protos of the `perfetto` wheel),
replays it as a reader does (incremental state per sequence, interned names, defaults, begin/end
stacks per track) and fails (one line, exit 1) unless its slices, instants, args, track names,
flows and counters equal the JSON's exactly and every sequence's timestamps are in order.
Writes a JSON summary (counts per (track, name, kind), flows, counters) to SUMMARY_OUT.
"""
import collections
import json
import sys

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

CLEARED, NEEDS = 1, 2
MONOTONIC = 3
PSEUDO_TID_BASE = 1000000000


def fail(msg):
    print(msg[:600])
    sys.exit(1)


def load_perfetto(path):
    trace = Trace()
    trace.ParseFromString(open(path, "rb").read())
    seqs = {}
    tracks = {}
    events = collections.defaultdict(list)  # track uuid -> [(ts, type, name, cat, args, flows, terms, value)]
    last_ts = {}
    snapshot = None
    for i, p in enumerate(trace.packet):
        seq = p.trusted_packet_sequence_id
        if not seq:
            fail("packet %d has no trusted_packet_sequence_id" % i)
        if p.HasField("clock_snapshot"):
            snapshot = p.clock_snapshot
        st = seqs.setdefault(seq, {"valid": False})
        if p.sequence_flags & CLEARED:
            st.clear()
            st.update(valid=True, names={}, cats={}, argn={}, args={}, defaults=None)
        if p.HasField("trace_packet_defaults"):
            st["defaults"] = p.trace_packet_defaults
        if p.HasField("interned_data"):
            if not st["valid"]:
                fail("packet %d: interned data before SEQ_INCREMENTAL_STATE_CLEARED on sequence %d" % (i, seq))
            d = p.interned_data
            for table, entries in (("names", d.event_names), ("cats", d.event_categories),
                                   ("argn", d.debug_annotation_names)):
                for e in entries:
                    if e.iid in st[table]:
                        fail("packet %d: iid %d of %s defined twice" % (i, e.iid, table))
                    st[table][e.iid] = e.name
            for e in d.debug_annotation_string_values:
                st["args"][e.iid] = e.str.decode("utf-8")  # strict: invalid UTF-8 fails here
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.uuid in tracks:
                fail("track uuid %d described twice" % td.uuid)
            tracks[td.uuid] = td
        if not p.HasField("track_event"):
            continue
        if not st["valid"] or not (p.sequence_flags & NEEDS):
            fail("packet %d: track event on sequence %d without valid incremental state" % (i, seq))
        dflt = st["defaults"]
        if dflt is None or dflt.timestamp_clock_id != MONOTONIC:
            fail("packet %d: timestamps not on the MONOTONIC clock (defaults %r)" % (i, dflt))
        if p.timestamp < last_ts.get(seq, 0):
            fail("sequence %d goes back in time at packet %d: %d < %d" % (seq, i, p.timestamp, last_ts[seq]))
        last_ts[seq] = p.timestamp
        te = p.track_event
        track = te.track_uuid if te.HasField("track_uuid") else dflt.track_event_defaults.track_uuid
        name = st["names"][te.name_iid] if te.HasField("name_iid") else None
        cats = [st["cats"][c] for c in te.category_iids]
        args = {}
        for a in te.debug_annotations:
            key = st["argn"][a.name_iid]
            if a.HasField("string_value_iid"):
                v = st["args"][a.string_value_iid]
            elif a.HasField("bool_value"):
                v = bool(a.bool_value)
            elif a.HasField("uint_value"):
                v = a.uint_value
            elif a.HasField("int_value"):
                v = a.int_value
            elif a.HasField("double_value"):
                v = a.double_value
            elif len(a.array_values):
                v = tuple(x.int_value for x in a.array_values)
            else:
                fail("packet %d: annotation %r without a value" % (i, key))
            args[key] = v
        events[track].append((p.timestamp, te.type, name, cats[0] if cats else None, args,
                              tuple(te.flow_ids), tuple(te.terminating_flow_ids), te.counter_value))
    return tracks, events, snapshot


def main():
    tracks, events, snapshot = load_perfetto(sys.argv[1])
    J = json.load(open(sys.argv[2], encoding="utf-8"))
    base = J["otherData"]["time_base_ns"]
    if snapshot is None or snapshot.primary_trace_clock != MONOTONIC:
        fail("no clock snapshot making MONOTONIC the trace clock")
    if MONOTONIC not in [c.clock_id for c in snapshot.clocks]:
        fail("clock snapshot lacks MONOTONIC")

    # Perfetto tracks -> the key the JSON gives the same track.
    procs = {}
    key_of = {}
    for uuid, td in tracks.items():
        if td.HasField("process"):
            procs[uuid] = td.process
    for uuid, td in tracks.items():
        if td.HasField("thread"):
            key_of[uuid] = (td.thread.pid, "tid", td.thread.tid)
    for uuid, td in tracks.items():
        if td.HasField("counter") or td.HasField("thread") or td.HasField("process"):
            continue
        if td.parent_uuid not in procs:
            fail("track %r has no process parent" % td.name)
        key_of[uuid] = (procs[td.parent_uuid].pid, "name", td.name)

    ev = J["traceEvents"]
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    pname = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}

    def jkey(pid, tid):
        return (pid, "name", tname[(pid, tid)]) if tid >= PSEUDO_TID_BASE else (pid, "tid", tid)

    def ns(ts_us):
        return base + int(round(ts_us * 1000))

    def norm(args):
        return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in args.items()))

    # names of processes and threads
    got_p = {td.pid: td.process_name for td in procs.values()}
    if got_p != pname:
        fail("process names differ: perfetto %r, json %r" % (got_p, pname))
    got_t = {(td.thread.pid, td.thread.tid): td.thread.thread_name for td in tracks.values() if td.HasField("thread")}
    want_t = {k: v for k, v in tname.items() if k[1] < PSEUDO_TID_BASE}
    if got_t != want_t:
        fail("thread names differ: only perfetto %r, only json %r" % (
            set(got_t.items()) - set(want_t.items()), set(want_t.items()) - set(got_t.items())))
    got_n = sorted(k[2] for k in key_of.values() if k[1] == "name")
    want_n = sorted(v for k, v in tname.items() if k[1] >= PSEUDO_TID_BASE)
    if got_n != want_n:
        fail("GPU stream / NVTX async tracks differ: perfetto %r, json %r" % (got_n, want_n))

    # slices and instants, replayed per track
    got = collections.Counter()
    slices = []  # (key, start, end, flows, terms)
    counters = collections.Counter()
    for uuid, evs in events.items():
        td = tracks.get(uuid)
        if td is None:
            fail("events on undescribed track %d" % uuid)
        if td.HasField("counter"):
            parent = key_of[td.parent_uuid] if td.parent_uuid in key_of else None
            for e in evs:
                if e[1] != TrackEvent.TYPE_COUNTER:
                    fail("non-counter event on counter track %r" % td.name)
                counters[(parent[0], parent[2], td.name, e[0], e[7])] += 1
            continue
        key = key_of[uuid]
        stack = []
        for ts, typ, name, cat, args, flows, terms, _ in evs:
            if typ == TrackEvent.TYPE_SLICE_BEGIN:
                stack.append((ts, name, cat, args, flows, terms))
            elif typ == TrackEvent.TYPE_SLICE_END:
                if not stack:
                    fail("end without begin on %r at %d" % (key, ts))
                b = stack.pop()
                got[("X", key, b[1], b[2], b[0], ts - b[0], norm(b[3]))] += 1
                slices.append((key, b[0], ts, b[4], b[5]))
            elif typ == TrackEvent.TYPE_INSTANT:
                got[("i", key, name, cat, ts, 0, norm(args))] += 1
            else:
                fail("unexpected event type %d on %r" % (typ, key))
        for b in stack:
            got[("B", key, b[1], b[2], b[0], None, norm(b[3]))] += 1
            slices.append((key, b[0], None, b[4], b[5]))

    want = collections.Counter()
    jflow_s, jflow_f = {}, {}
    jcounters = collections.Counter()
    for e in ev:
        ph = e["ph"]
        if ph in ("X", "B", "i"):
            dur = None if ph == "B" else (0 if ph == "i" else ns(e["ts"] + e["dur"]) - ns(e["ts"]))
            want[(ph, jkey(e["pid"], e["tid"]), e["name"], e["cat"], ns(e["ts"]), dur, norm(e["args"]))] += 1
        elif ph == "s":
            jflow_s[e["id"]] = (jkey(e["pid"], e["tid"]), ns(e["ts"]))
        elif ph == "f":
            jflow_f[e["id"]] = (jkey(e["pid"], e["tid"]), ns(e["ts"]))
        elif ph == "C":
            (k, v), = e["args"].items()
            if k != "tid %d" % e["tid"]:
                fail("JSON counter series %r on tid %d" % (k, e["tid"]))
            jcounters[(e["pid"], e["tid"], e["name"], ns(e["ts"]), v)] += 1
    if got != want:
        a, b = got - want, want - got
        fail("slices differ (%d only in perfetto, %d only in json): e.g. %r / %r" % (
            sum(a.values()), sum(b.values()), next(iter(a), None), next(iter(b), None)))
    if counters != jcounters:
        fail("counters differ: perfetto %r, json %r" % (dict(counters), dict(jcounters)))

    # flows: the launch slice (flow_ids) to the GPU op slice (terminating_flow_ids)
    starts = collections.defaultdict(list)
    for key, s, e, flows, _ in slices:
        for f in flows:
            starts[f].append((key, s, e))
    pflows = {}
    for key, s, e, _, terms in slices:
        for f in terms:
            if len(starts[f]) != 1:
                fail("flow %d ends on %r but starts %d times" % (f, key, len(starts[f])))
            pflows[f] = (starts[f][0], (key, s))
    if set(pflows) != set(jflow_f) or set(jflow_s) != set(jflow_f):
        fail("flow ids differ: perfetto %d, json s %d f %d" % (len(pflows), len(jflow_s), len(jflow_f)))
    for f, ((skey, s, e), end) in pflows.items():
        jkey_s, jts = jflow_s[f]
        if end != jflow_f[f]:
            fail("flow %d ends at %r, json %r" % (f, end, jflow_f[f]))
        if skey != jkey_s or not (s <= jts and (e is None or jts <= e)):
            fail("flow %d starts on slice %r [%d, %s], json binds at %r %d" % (f, skey, s, e, jkey_s, jts))

    summary = collections.Counter()
    for k, n in got.items():
        summary["%s|%s|%s" % (k[0], k[1][2], k[2])] += n
    json.dump({"slices": summary, "flows": len(pflows), "counters": [list(k) for k in counters],
               "tracks": len(tracks)}, open(sys.argv[3], "w"))
    print("perfetto matches json: %d events, %d flows, %d counters, %d tracks" % (
        sum(got.values()), len(pflows), sum(counters.values()), len(tracks)))


main()
