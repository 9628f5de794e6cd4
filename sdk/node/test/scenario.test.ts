// The SDK conformance scenario of sdk/testdata/scenario.md, against a real `madeira serve`.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import {
  DeadlineExceededError, PermanentError, Producer, type Task, type TaskEnvelope, TransientError, Worker,
} from "../src/index.js";
import { Server, eventually, randomQueue, testdata } from "./support.js";

const scenario = testdata("scenario.json");
const T = scenario.tasks;
const expect = scenario.expect;

let server: Server;
before(async () => {
  server = await Server.start();
});
after(async () => {
  await server?.stop();
});

test("conformance scenario", { timeout: 60_000 }, async () => {
  const queue = randomQueue(scenario.queue_prefix);
  const producer = new Producer({ baseUrl: server.baseUrl });
  const base = { queue, payload_version: 1 };

  // 1. Produce.
  const okEnvelopes: TaskEnvelope[] = [];
  for (let i = 0; i < T.ok.count; i++) {
    okEnvelopes.push({ ...base, task_type: T.ok.task_type, payload: { i }, priority: T.ok.priorities[i % T.ok.priorities.length] });
  }
  const okResults = await producer.submitBatch(okEnvelopes);
  const okIds = okResults.map((r) => {
    assert.ok("task_id" in r, `batch item refused: ${JSON.stringify(r)}`);
    return r.task_id;
  });
  assert.equal(new Set(okIds).size, T.ok.count);

  const scheduleTime = new Date(Date.now() + T.delayed.delay_ms); // the language's zone-aware time value
  const delayed = await producer.submit({ ...base, task_type: T.delayed.task_type, payload: {}, schedule_time: scheduleTime });
  assert.equal(delayed.status, "scheduled");
  const transient = await producer.submit({ ...base, task_type: T.transient_once.task_type, payload: {} });
  const permanent = await producer.submit({ ...base, task_type: T.permanent.task_type, payload: {} });
  const sleeper = await producer.submit({
    ...base, task_type: T.sleeper.task_type, payload: {}, timeout_ms: T.sleeper.timeout_ms, max_retries: T.sleeper.max_retries,
  });
  const allIds = [...okIds, delayed.task_id, transient.task_id, permanent.task_id, sleeper.task_id];

  // 2. Work.
  const runs = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const ran = (id: string) => runs.set(id, (runs.get(id) ?? 0) + 1).get(id)!;
  let sleeperAbortReason: unknown;
  let sleeperFinished = false;
  const errors: unknown[] = [];

  const worker = new Worker({
    baseUrl: server.baseUrl, queues: [queue], slots: scenario.slots, waitMs: 1000, onError: (e) => errors.push(e),
  });
  const recordAndSucceed = async (task: { task_id: string }) => {
    ran(task.task_id);
    startedAt.set(task.task_id, Date.now());
    return { ok: true };
  };
  worker.handle(T.ok.task_type, [1], recordAndSucceed);
  worker.handle(T.delayed.task_type, [1], recordAndSucceed);
  worker.handle(T.transient_once.task_type, [1], async (task) => {
    if (ran(task.task_id) <= T.transient_once.times) throw new TransientError("blip");
    return { ok: true };
  });
  worker.handle(T.permanent.task_type, [1], async (task) => {
    ran(task.task_id);
    throw new PermanentError("cannot ever work");
  });
  worker.handle(T.sleeper.task_type, [1], async (task, { signal }) => {
    ran(task.task_id);
    try {
      await delay(T.sleeper.sleeps_ms, undefined, { signal });
      sleeperFinished = true;
      return { late: true };
    } catch (err) {
      sleeperAbortReason = signal.reason;
      throw err;
    }
  });
  worker.start();

  // 3. Wait until every task is terminal, then close.
  const terminal = new Set(["succeeded", "dead", "cancelled"]);
  const tasks = new Map<string, Task>();
  try {
    await eventually(
      async () => {
        const page = await producer.list({ queue, limit: 1000 });
        for (const t of page.tasks) tasks.set(t.task_id, t);
        return allIds.every((id) => terminal.has(tasks.get(id)?.status ?? ""));
      },
      30_000,
      "every scenario task to be terminal",
    );
  } finally {
    await worker.close();
  }

  // 4. Assert through GET /v1/tasks/{id} and /attempts.
  const check = async (id: string, exp: { status: string; attempts: number; outcomes?: string[] }) => {
    const task = await producer.get(id);
    const attempts = await producer.attempts(id);
    assert.equal(task.status, exp.status, `${task.task_type} ${id} status`);
    assert.equal(task.attempts, exp.attempts, `${task.task_type} ${id} attempts`);
    assert.equal(attempts.length, exp.attempts);
    if (exp.outcomes) assert.deepEqual(attempts.map((a) => a.outcome), exp.outcomes, `${task.task_type} outcomes`);
    return { task, attempts };
  };

  for (const id of okIds) {
    await check(id, expect["scenario.ok"]);
    assert.equal(runs.get(id), 1, `scenario.ok ${id} handler runs`);
  }

  const d = await check(delayed.task_id, expect["scenario.delayed"]);
  assert.equal(Date.parse(d.task.schedule_time), scheduleTime.getTime());
  assert.ok(startedAt.get(delayed.task_id)! >= scheduleTime.getTime(), "delayed task started before its schedule_time");
  assert.ok(Date.parse(d.attempts[0]!.started_at) >= scheduleTime.getTime(), "server started the attempt early");

  const tr = await check(transient.task_id, expect["scenario.transient"]);
  assert.equal(tr.attempts[0]!.error?.type, "TransientError");
  const gapMs = Date.parse(tr.attempts[1]!.started_at) - Date.parse(tr.attempts[0]!.finished_at!);
  assert.ok(gapMs < 5000, `fast retry took ${gapMs} ms`);

  const p = await check(permanent.task_id, expect["scenario.permanent"]);
  assert.equal(p.task.last_error?.type, "PermanentError");
  assert.equal(p.task.last_error?.message, "cannot ever work");

  const s = await check(sleeper.task_id, expect["scenario.sleeper"]);
  assert.ok(sleeperAbortReason instanceof DeadlineExceededError, `sleeper abort reason: ${String(sleeperAbortReason)}`);
  assert.equal(sleeperFinished, false);
  assert.equal(s.task.result, null, "the sleeper's late result was acked");

  // No handler ran twice for one task, except the transient task's retry.
  for (const [id, count] of runs) {
    assert.equal(count, id === transient.task_id ? 2 : 1, `handler runs of ${id}`);
  }
  assert.equal(runs.size, allIds.length);
  assert.deepEqual(errors, [], "background errors");
});
