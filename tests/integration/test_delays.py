"""Delayed tasks are handed out within 100 ms of schedule_time on an idle server (SPEC §4)."""

import threading
import time

from client import envelope, parse_rfc3339, rfc3339


def test_delayed_task_precision(api, q):
    due = time.time() + 1.5
    due_text = rfc3339(due)
    tid = api.submit_ok(envelope(q, schedule_time=due_text))
    assert api.task(tid)["status"] == "scheduled"
    out = {}

    def park():
        out["leases"] = api.lease([q], wait_ms=5000)
        out["at"] = time.time()

    th = threading.Thread(target=park)
    th.start()
    th.join(timeout=10)
    assert [l["task"]["task_id"] for l in out["leases"]] == [tid]
    lateness = out["at"] - parse_rfc3339(due_text)
    print("delayed task lateness: %.1f ms" % (lateness * 1000))
    assert lateness >= -0.005, "handed out before schedule_time"
    assert lateness < 0.100, "handed out %.0f ms late" % (lateness * 1000)


def test_scheduled_becomes_pending_without_a_worker(api, q):
    tid = api.submit_ok(envelope(q, schedule_time=rfc3339(time.time() + 0.3)))
    api.wait_status(tid, "pending", timeout=3)
