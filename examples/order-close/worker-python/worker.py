"""Python worker for order.close_timeout (payload version 1).

Closing an order = appending "<order_id> python <task_id> <unix_ms>" to the shared ledger
(the stand-in for the orders database). Run with the SDK on the path:

    PYTHONPATH=../../../sdk/python MADEIRA_URL=http://127.0.0.1:8080 LEDGER=/tmp/ledger python3 worker.py
"""
import os
import random
import time

from madeira import Client, PermanentError, Worker

URL = os.environ.get("MADEIRA_URL", "http://127.0.0.1:8080")
LEDGER = os.environ.get("LEDGER", "ledger.txt")
WORK_MS = int(os.environ.get("WORK_MS", "100"))

client = Client(URL, token=os.environ.get("MADEIRA_TOKEN"))
worker = Worker(client, queues=["orders"], slots=4, worker_id=f"python-{os.getpid()}")
ledger_fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
closed = 0


@worker.handler("order.close_timeout", versions=[1])
def close_order(task):
    global closed
    order_id = task.payload.get("order_id")
    if not isinstance(order_id, int):
        raise PermanentError(f"bad order_id {order_id!r}")
    # the "is it still unpaid? then close it" round trip to the order database
    task.cancelled.wait(random.uniform(0.5, 1.5) * WORK_MS / 1000)
    os.write(ledger_fd, f"{order_id} python {task.task_id} {int(time.time() * 1000)}\n".encode())
    closed += 1
    return {"closed": True, "order_id": order_id, "by": "python"}


print(f"worker-python: ready ({worker.worker_id})", flush=True)
worker.run()  # blocks; SIGTERM = graceful close
print(f"worker-python: stopped after closing {closed} orders", flush=True)
