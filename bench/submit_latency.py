#!/usr/bin/env python3
"""One submit at a time against a running server: how long each POST /v1/tasks takes to answer,
idle or while leasers drain the queue. The figure the redis-pg record changes are judged by
(docs/benchmarks.md, tenth round): on redis-pg every answer waits for Redis and PostgreSQL.

usage: bench/submit_latency.py PORT [--submits N] [--leasers L] [--given-ids]

Loopback only; bounded by --submits. Prints one line: p50, p90 and mean in ms.
"""

import argparse
import http.client
import json
import statistics
import threading
import time

PAYLOAD = {"order_id": 1, "note": "x" * 200}


def lease_and_ack(port, worker, stop):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"}
    while not stop.is_set():
        conn.request("POST", "/v1/leases", json.dumps(
            {"worker_id": worker, "queues": ["latency"], "max_tasks": 100, "wait_ms": 500}), headers)
        leases = json.loads(conn.getresponse().read())["leases"]
        if leases:
            conn.request("POST", "/v1/leases/ack", json.dumps(
                {"acks": [{"lease_id": lease["lease_id"]} for lease in leases]}), headers)
            conn.getresponse().read()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("port", type=int)
    ap.add_argument("--submits", type=int, default=1000)
    ap.add_argument("--leasers", type=int, default=0)
    ap.add_argument("--given-ids", action="store_true", help="each envelope names its task_id")
    args = ap.parse_args()
    stop = threading.Event()
    leasers = [threading.Thread(target=lease_and_ack, args=(args.port, f"latency-{i}", stop))
               for i in range(args.leasers)]
    for t in leasers:
        t.start()
    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
    run = f"{time.time():.0f}"
    took = []
    try:
        for i in range(args.submits):
            envelope = {"task_type": "latency.noop", "queue": "latency", "payload_version": 1,
                        "payload": PAYLOAD}
            if args.given_ids:
                envelope["task_id"] = f"latency-{run}-{i}"
            start = time.perf_counter()
            conn.request("POST", "/v1/tasks", json.dumps(envelope),
                         {"Content-Type": "application/json"})
            answer = conn.getresponse()
            answer.read()
            took.append((time.perf_counter() - start) * 1000)
            if answer.status != 202:
                raise SystemExit(f"POST /v1/tasks answered {answer.status}")
    finally:
        stop.set()
        for t in leasers:
            t.join()
    took.sort()
    n = len(took)
    print(f"submits={n} leasers={args.leasers} p50={took[n // 2]:.2f} ms "
          f"p90={took[n * 9 // 10]:.2f} ms mean={statistics.mean(took):.2f} ms")


if __name__ == "__main__":
    main()
