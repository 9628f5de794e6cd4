"""No-op throughput benchmark: start madeira, preload N tasks (batched submits), drain them
with one 64-slot worker, print `drained N tasks in S s = R tasks/s`.

    MADEIRA_BIN=/path/to/madeira python3 bench/bench.py [--tasks 20000] [--slots 64] [--runs 3]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from madeira import Client, Worker  # noqa: E402
from madeira.testing import MadeiraServer  # noqa: E402


def server_cpu(server) -> float:
    """CPU seconds the server process used so far (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{server.proc.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def run_once(n: int, slots: int, pollers=None) -> float:
    with MadeiraServer() as server, Client(server.url) as client:
        queue = "bench"
        tasks = [{"task_type": "bench.noop", "queue": queue, "payload_version": 1,
                  "payload": {"i": i}} for i in range(n)]
        t0 = time.monotonic()
        results = client.submit_batch(tasks)
        bad = [r for r in results if isinstance(r, Exception)]
        if bad:
            raise SystemExit(f"{len(bad)} submits refused: {bad[0]}")
        preload = time.monotonic() - t0

        worker = Worker(client, queues=[queue], slots=slots, wait_ms=1000, pollers=pollers)
        worker.register("bench.noop", lambda ctx: None)
        start = time.monotonic()
        cpu0, srv0 = time.process_time(), server_cpu(server)
        worker.start()
        deadline = start + 300
        while worker.stats["succeeded"] < n and time.monotonic() < deadline:
            time.sleep(0.01)
        elapsed = time.monotonic() - start
        cpu, srv = time.process_time() - cpu0, server_cpu(server) - srv0
        done = worker.stats["succeeded"]
        worker.close()
        if done < n:
            raise SystemExit(f"only {done}/{n} tasks acked within 300 s")
        rate = n / elapsed
        print(f"drained {n} tasks in {elapsed:.2f} s = {rate:,.0f} tasks/s "
              f"(preload {preload:.2f} s; cpu: sdk {cpu:.2f} s, server {srv:.2f} s)", flush=True)
        return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pollers", type=int, default=None, help="concurrent lease calls")
    args = ap.parse_args()
    rates = [run_once(args.tasks, args.slots, args.pollers) for _ in range(args.runs)]
    if args.runs > 1:
        print(f"median of {args.runs}: {statistics.median(rates):,.0f} tasks/s")


if __name__ == "__main__":
    main()
