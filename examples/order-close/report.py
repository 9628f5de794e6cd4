#!/usr/bin/env python3
"""Reads the demo's outcome from the server and the ledger (standard library only).

    report.py wait   URL EXPECTED_TASKS TIMEOUT_S   exit 0 once every task of queue "orders" is terminal
    report.py report URL LEDGER ORDERS             print the final report; exit 1 unless exactly once
"""
import collections
import json
import sys
import time
import urllib.parse
import urllib.request

TERMINAL = {"succeeded", "dead", "cancelled"}
LANGUAGES = ("python", "node", "java")


def tasks(url):
    out, cursor = [], None
    for _ in range(100):  # bounded paging: 100 pages of 1000
        q = {"queue": "orders", "task_type": "order.close_timeout", "limit": "1000"}
        if cursor:
            q["cursor"] = cursor
        with urllib.request.urlopen(f"{url}/v1/tasks?{urllib.parse.urlencode(q)}", timeout=10) as r:
            page = json.load(r)
        out += page["tasks"]
        cursor = page.get("next_cursor")
        if not cursor:
            return out
    raise RuntimeError("too many pages")


def wait(url, expected, timeout):
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        ts = tasks(url)
        by = collections.Counter(t["status"] for t in ts)
        done = sum(by[s] for s in TERMINAL)
        line = ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
        if line != last:
            print(f"  tasks: {line}", flush=True)
            last = line
        if len(ts) >= expected and done == len(ts):
            return 0
        time.sleep(0.25)
    print(f"timed out after {timeout} s with tasks not terminal: {last}", flush=True)
    return 1


def ms(rfc3339):
    # "2025-09-11T04:45:00.000Z" -> unix ms (the server answers in UTC with milliseconds)
    from datetime import datetime
    return int(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000)


def report(url, ledger_path, orders):
    ts = tasks(url)
    by_status = collections.Counter(t["status"] for t in ts)
    ran = [t for t in ts if t["status"] == "succeeded" and not t.get("deduplicated")]
    dedup = [t for t in ts if t["status"] == "succeeded" and t.get("deduplicated")]
    order_ids = {t["payload"]["order_id"] for t in ts}
    schedule = {t["task_id"]: ms(t["schedule_time"]) for t in ts}

    closes = collections.defaultdict(list)  # order_id -> [(language, task_id, at_ms)]
    with open(ledger_path, "a+") as f:  # a missing ledger = nothing closed
        f.seek(0)
        for line in f:
            order_id, language, task_id, at = line.split()
            closes[int(order_id)].append((language, task_id, int(at)))
    per_language = collections.Counter(c[0] for cs in closes.values() for c in cs)
    lines = sum(len(cs) for cs in closes.values())
    twice = sorted(o for o, cs in closes.items() if len(cs) > 1)
    once = sum(1 for cs in closes.values() if len(cs) == 1)
    never = len(order_ids - closes.keys())
    early = [c for cs in closes.values() for c in cs if c[2] < schedule.get(c[1], 0)]
    late = [c[2] - schedule[c[1]] for cs in closes.values() for c in cs if c[1] in schedule]

    print()
    print("=== order-close report ===")
    print(f"orders placed:                 {orders}")
    keyed = sum(1 for t in ts if t.get("idempotency_key"))
    how = "same idempotency_key" if keyed == len(ts) else f"{len(ts) - keyed} without idempotency_key"
    print(f"tasks submitted:               {len(ts)}  (every order twice, {how})")
    print(f"  succeeded, run by a worker:  {len(ran)}")
    print(f"  succeeded, deduplicated:     {len(dedup)}  (never handed to a worker)")
    other = {k: v for k, v in by_status.items() if k != "succeeded"}
    if other:
        print(f"  other states:                {dict(other)}")
    print(f"closes per language:           "
          + ", ".join(f"{lang} {per_language.get(lang, 0)}" for lang in LANGUAGES))
    if late:
        print(f"closed after schedule_time:    {len(late) - len(early)}/{len(late)} "
              f"(latest {max(late)} ms after its schedule_time)")
    print(f"ledger lines:                  {lines}")
    print(f"closed exactly once:           {once}/{orders}")
    ok = (once == orders and len(order_ids) == orders and not twice and never == 0 and len(ts) == 2 * orders
          and len(ran) == orders and len(dedup) == orders and lines == orders and not early)
    if twice:
        print(f"CLOSED TWICE: {twice[:20]}")
    if never:
        print(f"NEVER CLOSED: {never} orders")
    if early:
        print(f"CLOSED BEFORE schedule_time: {len(early)}")
    print("OK: every order closed exactly once" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["wait"]:
        sys.exit(wait(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
    if sys.argv[1:2] == ["report"]:
        sys.exit(report(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    sys.exit(__doc__)
