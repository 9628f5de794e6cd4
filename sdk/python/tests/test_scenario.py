"""The conformance scenario of ../testdata/scenario.md against a real `madeira serve`."""
import threading
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone

from madeira import PermanentError, TransientError, Worker
from madeira.timefmt import parse_rfc3339

from conftest import vectors, wait_until

SCENARIO = vectors("scenario.json")
T = SCENARIO["tasks"]
EXPECT = SCENARIO["expect"]
TERMINAL = {"succeeded", "dead", "cancelled"}


def test_conformance_scenario(client, server):
    queue = f"{SCENARIO['queue_prefix']}-{time.time_ns():x}"
    runs = defaultdict(list)        # task_id -> [(started wall-clock datetime, ctx)]
    lock = threading.Lock()
    transient_failed = set()
    sleeper_seen = {}

    def record(ctx):
        with lock:
            runs[ctx.task_id].append((datetime.now(timezone.utc), ctx))

    # 1. produce
    ok = T["ok"]
    batch = [{"task_type": ok["task_type"], "queue": queue, "payload_version": 1,
              "payload": {"i": i}, "priority": ok["priorities"][i % len(ok["priorities"])]}
             for i in range(ok["count"])]
    results = client.submit_batch(batch)
    assert all(not isinstance(r, Exception) for r in results), results
    ok_ids = [r.task_id for r in results]
    assert len(set(ok_ids)) == ok["count"]

    schedule_time = datetime.now(timezone.utc) + timedelta(milliseconds=T["delayed"]["delay_ms"])
    delayed = client.submit(task_type=T["delayed"]["task_type"], queue=queue, payload_version=1,
                            payload={}, schedule_time=schedule_time)
    assert delayed.status == "scheduled"
    transient = client.submit(task_type=T["transient_once"]["task_type"], queue=queue,
                              payload_version=1, payload={})
    permanent = client.submit(task_type=T["permanent"]["task_type"], queue=queue,
                              payload_version=1, payload={})
    sleeper = client.submit(task_type=T["sleeper"]["task_type"], queue=queue, payload_version=1,
                            payload={}, timeout_ms=T["sleeper"]["timeout_ms"],
                            max_retries=T["sleeper"]["max_retries"])

    # 2. work
    worker = Worker(client, queues=[queue], slots=SCENARIO["slots"], wait_ms=1000)

    @worker.handler(ok["task_type"], versions=[1])
    @worker.handler(T["delayed"]["task_type"], versions=[1])
    def succeed(ctx):
        record(ctx)
        return {"ok": True}

    @worker.handler(T["transient_once"]["task_type"], versions=[1])
    def transient_once(ctx):
        record(ctx)
        with lock:
            first = ctx.task_id not in transient_failed
            transient_failed.add(ctx.task_id)
        if first:
            raise TransientError("lock conflict, try again")
        return {"ok": True}

    @worker.handler(T["permanent"]["task_type"], versions=[1])
    def permanent_failure(ctx):
        record(ctx)
        raise PermanentError("this order no longer exists")

    @worker.handler(T["sleeper"]["task_type"], versions=[1])
    def sleep(ctx):
        record(ctx)
        told = ctx.cancelled.wait(T["sleeper"]["sleeps_ms"] / 1000.0)
        sleeper_seen.update(told=told, reason=ctx.cancel_reason, remaining=ctx.remaining())
        return {"late": True}

    all_ids = ok_ids + [delayed.task_id, transient.task_id, permanent.task_id, sleeper.task_id]
    worker.start()
    try:
        # 3. wait (bounded) until every task is terminal
        def all_terminal():
            states = {tid: client.get(tid) for tid in all_ids}
            return states if all(s["status"] in TERMINAL for s in states.values()) else None
        states = wait_until(all_terminal, timeout=30, interval=0.2)
    finally:
        worker.close()

    # 4. assert
    def outcomes(task_id):
        return [a["outcome"] for a in client.attempts(task_id)]

    exp = EXPECT[ok["task_type"]]
    for tid in ok_ids:
        assert states[tid]["status"] == exp["status"]
        assert states[tid]["attempts"] == exp["attempts"]
        assert outcomes(tid) == exp["outcomes"]
        assert len(runs[tid]) == 1, f"handler ran {len(runs[tid])} times for {tid}"
        assert states[tid]["result"] == {"ok": True}

    exp = EXPECT[T["delayed"]["task_type"]]
    st = states[delayed.task_id]
    assert st["status"] == exp["status"] and st["attempts"] == exp["attempts"]
    assert len(runs[delayed.task_id]) == 1
    started = runs[delayed.task_id][0][0]
    assert started >= schedule_time, (started, schedule_time)
    assert parse_rfc3339(client.attempts(delayed.task_id)[0]["started_at"]) >= \
        schedule_time.replace(microsecond=schedule_time.microsecond // 1000 * 1000)

    exp = EXPECT[T["transient_once"]["task_type"]]
    st = states[transient.task_id]
    assert st["status"] == exp["status"] and st["attempts"] == exp["attempts"]
    atts = client.attempts(transient.task_id)
    assert [a["outcome"] for a in atts] == exp["outcomes"]
    assert atts[0]["error"]["type"] == "TransientError"
    # a fast retry is re-queued at once (the back-off tier would wait ~30 s)
    gap = parse_rfc3339(atts[1]["started_at"]) - parse_rfc3339(atts[0]["finished_at"])
    assert gap < timedelta(seconds=5)
    assert len(runs[transient.task_id]) == 2

    exp = EXPECT[T["permanent"]["task_type"]]
    st = states[permanent.task_id]
    assert st["status"] == exp["status"] and st["attempts"] == exp["attempts"]
    assert outcomes(permanent.task_id) == exp["outcomes"]
    assert st["last_error"]["type"] == "PermanentError"
    assert st["last_error"]["message"] == "this order no longer exists"
    assert len(runs[permanent.task_id]) == 1

    exp = EXPECT[T["sleeper"]["task_type"]]
    st = states[sleeper.task_id]
    assert st["status"] == exp["status"] and st["attempts"] == exp["attempts"]
    assert outcomes(sleeper.task_id) == exp["outcomes"]
    assert len(runs[sleeper.task_id]) == 1
    assert sleeper_seen["told"] is True and sleeper_seen["reason"] == "deadline"
    assert st["result"] is None                      # its late result was not acked
    assert worker.stats["timed_out"] == 1

    # no handler ran twice for one task, except the transient one by design
    assert all(len(v) == 1 for k, v in runs.items() if k != transient.task_id)
    assert worker.stats["succeeded"] == ok["count"] + 2
