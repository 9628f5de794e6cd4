// Worker behaviour beyond the scenario, against a real server.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { LeaseLostError, Producer, Worker, WorkerClosedError, type WorkerOptions } from "../src/index.js";
import { SDK_VERSION } from "../src/version.js";
import { Server, eventually, randomQueue } from "./support.js";

let server: Server;
let producer: Producer;
before(async () => {
  server = await Server.start();
  producer = new Producer({ baseUrl: server.baseUrl });
});
after(async () => {
  await server?.stop();
});

function newWorker(queue: string, options: Partial<WorkerOptions> = {}) {
  const errors: unknown[] = [];
  const worker = new Worker({ baseUrl: server.baseUrl, queues: [queue], waitMs: 200, onError: (e) => errors.push(e), ...options });
  return { worker, errors };
}

async function until(taskId: string, status: string, timeoutMs = 10_000): Promise<void> {
  await eventually(async () => (await producer.get(taskId)).status === status, timeoutMs, `task ${taskId} to be ${status}`);
}

test("only the registered payload versions are leased", async () => {
  const queue = randomQueue("versions");
  const v1 = await producer.submit({ task_type: "order.close", queue, payload_version: 1, payload: {} });
  const v2 = await producer.submit({ task_type: "order.close", queue, payload_version: 2, payload: {} });
  const other = await producer.submit({ task_type: "other", queue, payload_version: 1, payload: {} });
  const seen: string[] = [];
  const { worker, errors } = newWorker(queue);
  worker.handle("order.close", [1], (task) => void seen.push(task.task_id)).start();
  try {
    await until(v1.task_id, "succeeded");
    await delay(300); // one more long-poll round: nothing else may arrive
  } finally {
    await worker.close();
  }
  assert.deepEqual(seen, [v1.task_id]);
  assert.equal((await producer.get(v2.task_id)).status, "pending");
  assert.equal((await producer.get(other.task_id)).status, "pending");
  assert.deepEqual(errors, []);
});

test("any other error fails with retry auto and the error body {type, message, stack}", async () => {
  const queue = randomQueue("auto");
  const { task_id } = await producer.submit({ task_type: "t", queue, payload_version: 1, payload: {}, max_retries: 1 });
  class OrderLocked extends Error {}
  const { worker } = newWorker(queue);
  worker.handle("t", 1, () => {
    throw new OrderLocked("order 7 is locked");
  }).start();
  try {
    await until(task_id, "retrying");
  } finally {
    await worker.close();
  }
  const task = await producer.get(task_id);
  assert.equal(task.last_error?.type, "OrderLocked");
  assert.equal(task.last_error?.message, "order 7 is locked");
  assert.match(task.last_error?.stack ?? "", /order 7 is locked\n\s+at /);
  assert.ok(task.next_attempt_at, "auto = back-off: a later attempt is planned");
});

test("a lost lease aborts the handler's signal with LeaseLostError and its result is not acked", async () => {
  const queue = randomQueue("lost");
  const { task_id } = await producer.submit({ task_type: "t", queue, payload_version: 1, payload: {} });
  let runs = 0;
  let reason: unknown;
  const { worker } = newWorker(queue, { slots: 1, leaseMs: 150 });
  worker.handle("t", 1, async (_task, { signal }) => {
    if (++runs > 1) return { run: runs };
    // Block the event loop past the lease: the extension cannot go out in time.
    const until = Date.now() + 600;
    while (Date.now() < until);
    await new Promise((resolve) => {
      signal.addEventListener("abort", resolve, { once: true });
      setTimeout(resolve, 5000);
    });
    reason = signal.reason;
    return { run: 1 };
  }).start();
  try {
    await until(task_id, "succeeded");
  } finally {
    await worker.close();
  }
  assert.ok(reason instanceof LeaseLostError, `reason: ${String(reason)}`);
  const attempts = await producer.attempts(task_id);
  assert.deepEqual(attempts.map((a) => a.outcome), ["lease_expired", "succeeded"]);
  assert.deepEqual((await producer.get(task_id)).result, { run: 2 });
});

test("leases are extended while a handler runs (lease_ms shorter than the run)", async () => {
  const queue = randomQueue("extend");
  const { task_id } = await producer.submit({ task_type: "t", queue, payload_version: 1, payload: {} });
  const { worker, errors } = newWorker(queue, { leaseMs: 300 });
  worker.handle("t", 1, async () => {
    await delay(1000);
    return { slow: true };
  }).start();
  try {
    await until(task_id, "succeeded");
  } finally {
    await worker.close();
  }
  assert.deepEqual((await producer.attempts(task_id)).map((a) => a.outcome), ["succeeded"]);
  assert.deepEqual(errors, []);
});

test("close lets running handlers finish within the grace period and hands the rest back with retry fast", async () => {
  const queue = randomQueue("close");
  const quick = await producer.submit({ task_type: "quick", queue, payload_version: 1, payload: {} });
  const stuck = await producer.submit({ task_type: "stuck", queue, payload_version: 1, payload: {} });
  let started = 0;
  let stuckReason: unknown;
  const { worker } = newWorker(queue, { slots: 2 });
  worker
    .handle("quick", 1, async () => {
      started++;
      await delay(200);
      return { quick: true };
    })
    .handle("stuck", 1, async (_task, { signal }) => {
      started++;
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      stuckReason = signal.reason;
      return { too: "late" };
    })
    .start();
  await eventually(async () => started === 2, 10_000, "both handlers to start");
  const t0 = Date.now();
  await worker.close(700);
  assert.ok(Date.now() - t0 < 5000, "close took too long");
  assert.equal(worker.busy, 0);

  assert.equal((await producer.get(quick.task_id)).status, "succeeded");
  assert.ok(stuckReason instanceof WorkerClosedError);
  const stuckTask = await producer.get(stuck.task_id);
  assert.equal(stuckTask.status, "pending", "a fast retry re-queues at once");
  assert.equal(stuckTask.last_error?.type, "WorkerClosedError");
  assert.deepEqual((await producer.attempts(stuck.task_id)).map((a) => a.outcome), ["failed"]);
});

test("acks are coalesced into batches; heartbeats carry language and sdk_version", async () => {
  const queue = randomQueue("batch");
  const results = await producer.submitBatch(
    Array.from({ length: 300 }, (_, i) => ({ task_type: "t", queue, payload_version: 1, payload: { i } })),
  );
  const ids = results.map((r) => ("task_id" in r ? r.task_id : assert.fail(JSON.stringify(r))));
  const { worker, errors } = newWorker(queue, { slots: 64 });
  const calls = new Map<string, number>();
  const send = worker.http.send.bind(worker.http);
  worker.http.send = (method, path, json, signal) => {
    calls.set(path, (calls.get(path) ?? 0) + 1);
    return send(method, path, json, signal);
  };
  let done = 0;
  worker.handle("t", 1, () => void done++).start();
  try {
    await eventually(async () => done === 300, 20_000, "300 handlers to run");
    await worker.acks.flush();
  } finally {
    await worker.close();
  }
  for (const id of ids.slice(0, 20)) assert.equal((await producer.get(id)).status, "succeeded");
  assert.equal((await producer.list({ queue, status: "succeeded", limit: 1000 })).tasks.length, 300);
  const ackCalls = calls.get("/v1/leases/ack") ?? 0;
  assert.ok(ackCalls >= 1 && ackCalls < 300, `${ackCalls} ack requests for 300 tasks`);
  assert.deepEqual(errors, []);

  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = metrics.split("\n").find((l) => l.includes(`worker_id="${worker.workerId}"`) && l.startsWith("madeira_worker_last_seen"));
  assert.ok(line?.includes('language="node"'), `heartbeat metric: ${line}`);
  assert.equal(SDK_VERSION, "0.1.0");
});

test("closeOnSignals closes the worker on SIGTERM", async () => {
  const queue = randomQueue("sigterm");
  const { worker } = newWorker(queue);
  worker.handle("t", 1, () => undefined).start();
  const remove = worker.closeOnSignals(["SIGUSR2"]);
  process.kill(process.pid, "SIGUSR2");
  await eventually(async () => (worker as unknown as { state: string }).state === "closed", 5000, "the worker to close");
  remove();
});
