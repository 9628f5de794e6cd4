#!/usr/bin/env python3
"""Renders the peer benchmark (bench/peers/results.json) as markdown tables, one per scenario,
optionally with Madeira's own figures beside the peers'.

usage: report.py PEERS.json [--madeira LABEL=FILE ...] [--drain-requests-per-task X]
                 [-o OUT.md | --into DOC.md]

--into DOC.md replaces what lies between the lines BEGIN_MARK and END_MARK (below) in DOC.md
with the report, its headings one level deeper (it sits under a "##" section there); what
surrounds them, such as a hand-written reading of the figures, stays. `make bench-peers` does
this to docs/benchmarks.md.

--madeira takes what `madeira_bench --json FILE` writes ({"results": [{"id", "store", "median",
"min", "max", "measurement", ...}]}), or a small hand-written file {"a.single": 31969, "b.drain":
{"median": 41612, "min": 40324, "max": 43081}, ...} keyed by madeira_bench ids. One madeira_bench
file may hold several stores (`--store sqlite,redis-pg`, as `make bench` runs it; each row names
its "store", ids stay plain): given as FILE or LABEL=FILE it becomes one Madeira row per store
("embedded" for sqlite, "redis-pg"; with LABEL: "LABEL sqlite", ...); LABEL=FILE@STORE takes one
store only. Or give one file per store, e.g. --madeira embedded=bench.json --madeira
redis-pg=bench-redis.json. Files that give the same store (the same row label) are merged, so
`make bench`'s file and the peer shapes' (madeira_bench --only peers) fill one row set: where a
store has the peers' shapes (pc.*, pd.*) they are its c and d rows (see SCENARIOS).

Ratios: "vs best peer" is Madeira's advantage over the best peer on the same figure (throughput:
Madeira / peer; latency: peer / Madeira), so > 1 means Madeira is ahead. "of limit" is Madeira's
throughput as a share of what the machine allows at best for that scenario (see LIMITS).
"""

import argparse
import json
import sys

PEERS = [("bullmq", "BullMQ"), ("asynq", "Asynq")]

# Scenario tables: title, peer figure id, madeira_bench figure ids, higher is better. The ids are
# alternatives, the first a store has wins: the peers' own shapes (madeira_bench --only peers: c
# at 2,000/s as pc.*, 10,000 delayed tasks as pd.*) before make bench's (c at 5,000/s, f with
# 1,000). One alternative may name several ids: a row each, against the same peer figure.
SCENARIOS = [
    ("a. enqueue, one task per call, 64 in flight", [("a.single", ["a.single"], True)]),
    ("a. enqueue in bulk", [("a.bulk", ["a.batch"], True)]),
    ("b. drain pre-enqueued no-op tasks, one worker process", [("b.drain", ["b.drain"], True)]),
    # Madeira measures from the submit's 202 (ready→leased) and from its send (sent→leased). On
    # redis-pg a task can be leased before its submit is answered (the answer waits for the
    # PostgreSQL record), so ready→leased is 0 there; sent→leased is never shorter than what the
    # peers measure (enqueue acknowledged → handler start), so its ratio flatters no one.
    ("c. latency, enqueue acknowledged → handler start (leased), steady rate",
     [("c.p50", [("pc.p50", "pc.e2e50"), ("c.p50", "c.e2e50")], False),
      ("c.p99", [("pc.p99", "pc.e2e99"), ("c.p99", "c.e2e99")], False),
      ("c.max", [("pc.max", "pc.e2emax"), ("c.max", "c.e2emax")], False),
      ("c.rate", ["pc.rate", "c.rate"], True)]),
    ("d. delayed tasks (2 s ahead): lateness after the due time",
     [("d.p50", ["pd.p50", "f.p50"], False), ("d.p99", ["pd.p99", "f.p99"], False),
      ("d.max", ["pd.max", "f.max"], False)]),
]

LIMITS = [
    ("limit.http", "loopback HTTP/1.1, trivial keep-alive server, 64 connections"),
    ("limit.xadd", "Redis XADD, 300-byte field, pipelined (16 conns × 64), AOF on"),
    ("limit.fdatasync", "append 64 B + fdatasync, one file in the temp dir"),
]


def fmt(v, unit):
    if v is None:
        return "n/a"
    if unit in ("ms",):
        return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"
    return f"{v:,.0f}"


def ratio(x):
    return "—" if x is None else f"{x:.2f}×"


STORE_LABELS = {"sqlite": "embedded", "redis-pg": "redis-pg"}

# What a Madeira row measures where a scenario shows it more than one way.
MEASURED_FROM = {f"{c}.{f}": how for c in ("c", "pc")
                 for f, how in (("p50", "ready→leased"), ("p99", "ready→leased"),
                                ("max", "ready→leased"), ("e2e50", "sent→leased"),
                                ("e2e99", "sent→leased"), ("e2emax", "sent→leased"))}


def leased_before_answered(figures, scenario="c"):
    """True when a store's tasks were leased before their submit's 202 (redis-pg): its
    ready→leased figures are then clamped at 0 and compare with nothing."""
    p50 = figures.get(f"{scenario}.p50")
    return bool(p50) and p50["median"] == 0 and f"{scenario}.e2e50" in figures


def chosen_ids(figures, alternatives):
    """The ids of the first alternative `figures` has any of (an alternative is an id or a
    tuple of ids), else ()."""
    for alt in alternatives:
        ids = (alt,) if isinstance(alt, str) else alt
        if any(i in figures for i in ids):
            return ids
    return ()


def merge_by_label(entries):
    """One entry per label: the figures (and failures) of several files for the same store
    together, the later file's winning where both have an id."""
    merged = {}
    for label, figures, failures in entries:
        if label in merged:
            merged[label][0].update(figures)
            merged[label][1].extend(failures)
        else:
            merged[label] = (dict(figures), list(failures))
    return [(label, figures, failures) for label, (figures, failures) in merged.items()]


def load_madeira(spec):
    """[(label, figures, failures)] for one --madeira LABEL=FILE[@STORE]: one entry per store."""
    label, _, path = spec.partition("=")
    if not path:
        label, path = "", spec
    path, _, only_store = path.partition("@")
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc.get("results"), list):
        figures = {}
        for key, v in doc.items():
            if isinstance(v, dict):
                figures[key] = {"median": v["median"], "min": v.get("min"), "max": v.get("max"),
                                "what": v.get("what", "")}
            elif isinstance(v, (int, float)):
                figures[key] = {"median": v, "min": None, "max": None, "what": ""}
        return [(label or "Madeira", figures, [])]
    # madeira_bench output; files written before rows carried "store" are the embedded store's.
    stores = list(dict.fromkeys(r.get("store", "sqlite") for r in doc["results"]))
    for f in doc.get("failures", []):
        if isinstance(f, dict) and f.get("store", "sqlite") not in stores:
            stores.append(f.get("store", "sqlite"))
    if only_store:
        if only_store not in stores:
            sys.exit("report.py: %s has no figures of store %r (it has: %s)"
                     % (path, only_store, ", ".join(stores) or "none"))
        stores = [only_store]
    out = []
    for store in stores:
        figures = {}
        for r in doc["results"]:
            if r.get("store", "sqlite") != store:
                continue
            figures[r["id"]] = {"median": r["median"], "min": r.get("min"), "max": r.get("max"),
                                "what": r.get("measurement", ""), "values": r.get("values", [])}
        failures = [f"run {f.get('run')} of {f.get('scenario')}: {f.get('error')}"
                    for f in doc.get("failures", [])
                    if isinstance(f, dict) and f.get("store", "sqlite") == store]
        if len(stores) == 1 and label:
            name = label
        elif label:
            name = f"{label} {store}"
        else:
            name = STORE_LABELS.get(store, store)
        out.append((name, figures, failures))
    return out


def range_of(fig, unit):
    if fig.get("min") is None or fig.get("max") is None:
        return "—"
    return f"{fmt(fig['min'], unit)} – {fmt(fig['max'], unit)}"


def scenario_limit(peer_id, limits, drain_rpt):
    """The machine's best for a throughput figure as {median, min, max} in tasks/s, and how it
    was derived; (None, None) where no limit applies."""
    derive = {
        "a.single": ("limit.http", 1, "loopback HTTP req/s (1 request a task)"),
        "a.bulk": ("limit.xadd", 1, "Redis pipelined XADD/s (1 append a task)"),
        "b.drain": ("limit.http", drain_rpt, f"loopback HTTP req/s ÷ {drain_rpt:g} requests a task"),
    }.get(peer_id)
    if not derive or derive[0] not in limits:
        return None, None
    src, per_task, how = derive
    f = limits[src]
    return {k: f[k] / per_task for k in ("median", "min", "max")}, how


def render(peers, madeira, drain_rpt):
    out = []
    m = peers["machine"]
    v = peers["versions"]
    rc = peers["redis_config"]
    figs = {(r["peer"], r["id"]): r for r in peers["results"]}
    limits = {r["id"]: r for r in peers["results"] if r["peer"] == "limit"}
    best = peers.get("best_concurrency", {})

    out.append("## Against the field: BullMQ and Asynq on the same machine\n")
    out.append(
        f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['kernel']}, {m['mem_gib']} GiB; "
        f"load average {m['loadavg_start']} at the start, {m['loadavg_end']} at the end. "
        f"{peers['runs']} runs per figure (median, min–max), scale {peers['scale']:g}, "
        f"{peers['seconds']} s in all, {peers['generated']}.\n")
    out.append(
        f"Versions: BullMQ {v['bullmq']} (ioredis {v['ioredis']}, Node.js {v['node']}), "
        f"Asynq {v['asynq']} ({v['go']}), Redis {v['redis']}. One private `redis-server` on "
        f"127.0.0.1, `appendonly {rc['appendonly']}`, `appendfsync {rc['appendfsync']}`, "
        f"`save \"\"`, other settings Redis defaults; `FLUSHALL` before every step. Peers keep "
        f"their own defaults (BullMQ keeps completed jobs, 1 attempt; Asynq deletes completed "
        f"tasks, MaxRetry 25, TaskCheckInterval 1 s, DelayedTaskCheckInterval 5 s).\n")
    counts = peers.get("counts", {})

    def c(key):  # a count as "100,000", or "?" when the run did not record it
        v = counts.get(key)
        return f"{v:,}" if isinstance(v, (int, float)) else "?"

    out.append(
        f"Counts: enqueue {c('enqueue')} tasks per mode; drain {c('bullmq_drain')} "
        f"(BullMQ) and {c('asynq_drain')} (Asynq) tasks (200k at most, and no more than "
        f"25 s at the tuning rate, to stay in time); latency {c('latency_seconds')} s at 2,000/s; "
        f"delayed {c('delayed')} tasks in 10 rounds 100 ms apart. Worker concurrency, "
        f"the best of 8/32/128/512 in one tuning drain: BullMQ {best.get('bullmq', '?')}, "
        f"Asynq {best.get('asynq', '?')}.\n")
    if madeira:
        out.append("Madeira rows come from: " + ", ".join(
            f"{label}" for label, _, _ in madeira) + " (`madeira_bench`, see its own section for "
            "its exact scenario shapes).\n")
        for label, _, failures in madeira:
            for f in failures:
                out.append(f"- Madeira {label} failed {f}")
        if any(failures for _, _, failures in madeira):
            out.append("")

    for title, rows in SCENARIOS:
        unit0 = None
        table = []
        notes = []
        for peer_id, madeira_id, higher in rows:
            peer_figs = [(name, figs.get((key, peer_id))) for key, name in PEERS]
            unit = next((f["unit"] for _, f in peer_figs if f), None)
            if unit is None:
                continue
            unit0 = unit0 or unit
            measured = [f for _, f in peer_figs if f and f["median"] is not None]
            best_peer = None
            if measured:
                best_peer = (max if higher else min)(measured, key=lambda f: f["median"])
            limit, limit_how = (scenario_limit(peer_id, limits, drain_rpt) if higher and peer_id != "c.rate"
                                else (None, None))
            label = peer_id.split(".", 1)[1]
            for (name, fig, _), mid in ((m, i) for m in madeira
                                        for i in chosen_ids(m[1], madeira_id)):
                mf = fig.get(mid)
                if not mf:
                    continue
                how = f" ({MEASURED_FROM[mid]})" if mid in MEASURED_FROM else ""
                vs_peer = None
                if (MEASURED_FROM.get(mid) == "ready→leased"
                        and leased_before_answered(fig, mid.split(".", 1)[0])):
                    how = " (ready→leased: leased before its 202, so no ratio)"
                elif best_peer and mf["median"]:
                    vs_peer = (mf["median"] / best_peer["median"] if higher
                               else best_peer["median"] / max(mf["median"], 1e-9))
                of_limit = f"{mf['median'] / limit['median']:.2f}" if limit else "—"
                table.append(f"| {label} | **Madeira {name}**{how} | **{fmt(mf['median'], unit)}** | "
                             f"{range_of(mf, unit)} | {ratio(vs_peer)} | {of_limit} |")
                if mf.get("what"):
                    runs = f", {len(mf['values'])} run(s)" if mf.get("values") else ""
                    notes.append(f"Madeira {name} `{mid}`: {mf['what']}{runs}")
            for name, fig in peer_figs:
                if not fig:
                    continue
                s = fig.get("settings", {})
                conc = f" (concurrency {s['concurrency']})" if "concurrency" in s else ""
                table.append(f"| {label} | {name}{conc} | {fmt(fig['median'], unit)} | "
                             f"{range_of(fig, unit)} | | |")
                for note in fig.get("notes", []):
                    notes.append(f"{name}: {note}")
            if limit:
                table.append(f"| {label} | limit: {limit_how} | {fmt(limit['median'], unit)} | "
                             f"{range_of(limit, unit)} | | |")
        if not table:
            continue
        out.append(f"### {title}\n")
        out.append(f"| figure | system | median ({unit0}) | min – max | Madeira vs best peer | "
                   f"Madeira ÷ limit |")
        out.append("|---|---|---|---|---|---|")
        out.extend(table)
        out.append("")
        for note in dict.fromkeys(notes):
            out.append(f"- {note}")
        if notes:
            out.append("")

    out.append("### Machine limits\n")
    out.append("| limit | unit | median | min – max |")
    out.append("|---|---|---|---|")
    for lid, what in LIMITS:
        f = limits.get(lid)
        if f:
            out.append(f"| {what} | {f['unit']} | {fmt(f['median'], f['unit'])} | "
                       f"{range_of(f, f['unit'])} |")
    out.append("")

    tuning = [t for t in peers.get("tuning", []) if t["id"] == "b.tune"]
    if tuning:
        out.append("### Concurrency tuning (one drain per setting)\n")
        out.append("| peer | concurrency | tasks | tasks/s |")
        out.append("|---|---|---|---|")
        for t in tuning:
            s = t.get("settings", {})
            out.append(f"| {t['peer']} | {s.get('concurrency')} | {s.get('tasks'):,} | "
                       f"{fmt(t['value'], 'tasks/s')} |")
        out.append("")

    if peers.get("notes"):
        out.append("Notes: " + "; ".join(peers["notes"]) + ".\n")
    if peers.get("failures"):
        out.append("### Failed steps\n")
        out.extend(f"- {f}" for f in peers["failures"])
        out.append("")
    out.append("Commands (`$REDIS_URL` is the private server):\n")
    out.append("```")
    out.extend(peers.get("commands", []))
    out.append("```")
    return "\n".join(out) + "\n"


BEGIN_MARK = "<!-- bench-peers: begin (written by make bench-peers; edit report.py, not this) -->"
END_MARK = "<!-- bench-peers: end -->"


def deeper(report):
    """The report with every heading one level deeper (not lines inside ``` blocks)."""
    lines, fenced = [], False
    for line in report.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        lines.append("#" + line if line.startswith("#") and not fenced else line)
    return "\n".join(lines)


def into(doc_text, report):
    """doc_text with the report between its markers; ValueError when they are not there once."""
    if doc_text.count(BEGIN_MARK) != 1 or doc_text.count(END_MARK) != 1:
        raise ValueError("needs the lines %r and %r, once each" % (BEGIN_MARK, END_MARK))
    head, rest = doc_text.split(BEGIN_MARK, 1)
    if END_MARK not in rest:
        raise ValueError("the end marker comes before the begin marker")
    _, tail = rest.split(END_MARK, 1)
    return head + BEGIN_MARK + "\n" + deeper(report).rstrip("\n") + "\n" + END_MARK + tail


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("peers", help="results JSON written by bench/peers/run.sh")
    ap.add_argument("--madeira", action="append", default=[], metavar="LABEL=FILE[@STORE]",
                    help="Madeira's figures (madeira_bench --json output, one row per store it "
                         "holds, or {id: value})")
    ap.add_argument("--drain-requests-per-task", type=float, default=2.0,
                    help="HTTP requests one drained task costs, for the drain limit (default 2: "
                         "one lease and one ack)")
    ap.add_argument("-o", "--out", help="write the markdown here instead of stdout")
    ap.add_argument("--into", metavar="DOC.md",
                    help="replace the part of DOC.md between the bench-peers markers instead")
    args = ap.parse_args()
    with open(args.peers) as f:
        peers = json.load(f)
    madeira = merge_by_label([entry for spec in args.madeira for entry in load_madeira(spec)])
    text = render(peers, madeira, args.drain_requests_per_task)
    if args.into:
        with open(args.into) as f:
            doc = f.read()
        try:
            doc = into(doc, text)
        except ValueError as e:
            sys.exit("report.py: %s: %s" % (args.into, e))
        with open(args.into, "w") as f:
            f.write(doc)
    elif args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
