"""Accepted means durable (SPEC §4): kill -9 loses no acknowledged task; SIGTERM and SIGINT
exit 0 within 10 s."""

import signal
import threading
import time

from client import Api, envelope, uid


def test_kill_9_loses_no_acknowledged_task(start_server, tmp_path):
    data = tmp_path / "durable"
    server = start_server(data_dir=data)
    api = Api(server.port)
    acked = [[] for _ in range(4)]
    stop = threading.Event()

    def producer(i):
        deadline = time.monotonic() + 20
        while not stop.is_set() and time.monotonic() < deadline:
            tid = uid("d%d" % i)
            try:
                r = api.submit(envelope("durable", task_id=tid), timeout=5)
            except OSError:
                return  # the server is gone
            if r.status in (200, 202):
                acked[i].append(tid)

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # let submits be in flight when the process dies
    server.kill()
    stop.set()
    for t in threads:
        t.join(timeout=10)
    ids = [tid for part in acked for tid in part]
    assert len(ids) > 10, "too few submits to say anything (%d)" % len(ids)

    again = start_server(data_dir=data)
    api2 = Api(again.port)
    lost = [tid for tid in ids if api2.get("/v1/tasks/" + tid).status != 200]
    print("acknowledged %d, lost %d" % (len(ids), len(lost)))
    assert lost == [], "acknowledged tasks lost after kill -9: %s" % lost[:10]


def test_sigterm_exits_0_within_10s_and_keeps_tasks(start_server, tmp_path):
    data = tmp_path / "term"
    server = start_server(data_dir=data)
    api = Api(server.port)
    tid = api.submit_ok(envelope("term"))
    running = api.submit_ok(envelope("term"))
    lease = api.lease_one("term", wait_ms=0)
    rc, took = server.terminate(timeout=10)
    print("SIGTERM took %.2f s" % took)
    assert rc == 0 and took < 10
    again = start_server(data_dir=data)
    api2 = Api(again.port)
    ids = {tid, running}
    assert {api2.task(i)["task_id"] for i in ids} == ids
    assert lease["task"]["task_id"] in ids


def test_sigterm_with_parked_long_poll(start_server):
    server = start_server()
    api = Api(server.port)
    th = threading.Thread(target=lambda: api.lease(["idle"], wait_ms=30000), daemon=True)
    th.start()
    time.sleep(0.3)
    rc, took = server.terminate(timeout=10)
    assert rc == 0 and took < 10, (rc, took)


def test_sigint_stops_like_sigterm(start_server, tmp_path):
    """Ctrl-C in a terminal: exit 0 within 10 s, a task accepted before it still there."""
    data = tmp_path / "int"
    server = start_server(data_dir=data)
    tid = Api(server.port).submit_ok(envelope("int"))
    rc, took = server.terminate(timeout=10, sig=signal.SIGINT)
    assert rc == 0 and took < 10, (rc, took)
    assert '"signal":"SIGINT"' in server.stderr(), server.stderr()[-2000:]
    again = start_server(data_dir=data)
    assert Api(again.port).task(tid)["status"] == "pending"
