// Producer against a real server: what only the server can judge comes back unchanged in ApiError.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ApiError, Producer, ValidationError, Worker } from "../src/index.js";
import { Server, eventually, randomQueue, testdata } from "./support.js";

const vectors = testdata("envelopes.json");

let server: Server;
let producer: Producer;
before(async () => {
  server = await Server.start();
  producer = new Producer({ baseUrl: server.baseUrl });
});
after(async () => {
  await server?.stop();
});

describe("envelopes.json against the server", () => {
  test("every valid envelope is accepted", async () => {
    for (const v of vectors.valid) {
      const answer = await producer.submit({ ...v.envelope, task_id: undefined });
      assert.equal(answer.duplicate, false, v.name);
    }
  });

  test("the locally refused cases are refused the same way by the server (raw POST)", async () => {
    const raw = async (envelope: unknown) => {
      const res = await fetch(`${server.baseUrl}/v1/tasks`, { method: "POST", body: JSON.stringify(envelope) });
      return { status: res.status, body: (await res.json()) as { error?: { code: string; field?: string } } };
    };
    for (const v of vectors.invalid.filter((v: { server_only: boolean }) => !v.server_only)) {
      const { status, body } = await raw(v.envelope);
      assert.equal(status, 400, v.name);
      assert.equal(body.error?.code, v.code, v.name);
      assert.equal(body.error?.field, v.field, v.name);
    }
    // Arrays count as nesting levels on both sides.
    const deep = { task_type: "t", payload_version: 1, payload: { a: [[[[[1]]]]] } };
    assert.equal((await raw(deep)).body.error?.code, "payload_too_deep");
    assert.throws(() => producer.validate(deep), { code: "payload_too_deep" });
  });

  test("server_only cases surface the server's code, field and status", async () => {
    for (const v of vectors.invalid.filter((v: { server_only: boolean }) => v.server_only)) {
      await assert.rejects(producer.submit(v.envelope), (err: unknown) => {
        assert.ok(err instanceof ApiError, `${v.name}: ${err}`);
        assert.equal(err.status, 400);
        assert.equal(err.code, v.code);
        assert.equal(err.field, v.field);
        assert.ok(err.message.length > 0);
        return true;
      });
    }
  });

  test("a batch judges each item alone and passes item errors on unchanged", async () => {
    const tooFar = vectors.invalid.find((v: { name: string }) => v.name === "schedule-time-too-far").envelope;
    const results = await producer.submitBatch([{ task_type: "t", payload_version: 1, payload: {} }, tooFar]);
    assert.equal(results.length, 2);
    assert.ok("task_id" in results[0]!);
    assert.ok("error" in results[1]!);
    assert.equal(results[1].error.code, "schedule_too_far");
    assert.equal(results[1].error.field, "schedule_time");
  });
});

test("duplicates, conflicts, get, cancel", async () => {
  const queue = randomQueue("producer");
  const envelope = { task_id: `dup-${queue}`, task_type: "t", queue, payload_version: 1, payload: { a: 1 } };
  const first = await producer.submit(envelope);
  assert.deepEqual(first, { task_id: envelope.task_id, status: "pending", duplicate: false });
  const again = await producer.submit({ ...envelope, payload: { a: 1 } });
  assert.equal(again.duplicate, true);
  await assert.rejects(producer.submit({ ...envelope, payload: { a: 2 } }), { name: "ApiError", status: 409, code: "task_id_conflict" });

  const task = await producer.get(envelope.task_id);
  assert.equal(task.status, "pending");
  assert.deepEqual(task.payload, { a: 1 });
  const cancelled = await producer.cancel(envelope.task_id);
  assert.equal(cancelled.status, "cancelled");
  await assert.rejects(producer.cancel(envelope.task_id), { status: 409, code: "task_terminal" });
  await assert.rejects(producer.get("no-such-task"), { status: 404, code: "not_found" });
});

test("schedule_time given as an offset string and as a Date are the same instant", async () => {
  const at = new Date(Date.now() + 3_600_000);
  at.setUTCMilliseconds(0);
  const offset = new Date(at.getTime() + 8 * 3_600_000).toISOString().replace(".000Z", "+08:00");
  const a = await producer.submit({ task_type: "t", payload_version: 1, payload: {}, schedule_time: offset });
  const b = await producer.submit({ task_type: "t", payload_version: 1, payload: {}, schedule_time: at });
  assert.equal(a.status, "scheduled");
  assert.equal(Date.parse((await producer.get(a.task_id)).schedule_time), at.getTime());
  assert.equal(Date.parse((await producer.get(b.task_id)).schedule_time), at.getTime());
});

test("a naive schedule_time is refused before anything is sent", async () => {
  await assert.rejects(
    producer.submit({ task_type: "t", payload_version: 1, payload: {}, schedule_time: "2030-01-01T00:00:00" }),
    (err: unknown) => err instanceof ValidationError && err.field === "schedule_time",
  );
  const numeric = 1893456000 as unknown as Date;
  await assert.rejects(
    producer.submit({ task_type: "t", payload_version: 1, payload: {}, schedule_time: numeric }),
    { name: "ValidationError", code: "invalid_schedule_time" },
  );
});

describe("bearer tokens", () => {
  let secured: Server;
  before(async () => {
    secured = await Server.start(
      '[[auth.tokens]]\nname = "p"\ntoken = "ptok"\nscopes = ["producer"]\n' +
        '[[auth.tokens]]\nname = "w"\ntoken = "wtok"\nscopes = ["worker"]\n',
    );
  });
  after(async () => {
    await secured?.stop();
  });

  test("producer and worker send their token; a missing or wrong one is 401", async () => {
    const queue = randomQueue("auth");
    const ok = new Producer({ baseUrl: secured.baseUrl, token: "ptok" });
    const { task_id } = await ok.submit({ task_type: "t", queue, payload_version: 1, payload: {} });
    await assert.rejects(
      new Producer({ baseUrl: secured.baseUrl }).get(task_id),
      { name: "ApiError", status: 401, code: "unauthorized" },
    );
    await assert.rejects(
      new Producer({ baseUrl: secured.baseUrl, token: "nope" }).get(task_id),
      { status: 401, code: "unauthorized" },
    );

    const errors: unknown[] = [];
    const worker = new Worker({ baseUrl: secured.baseUrl, token: "wtok", queues: [queue], waitMs: 200, onError: (e) => errors.push(e) });
    worker.handle("t", 1, () => ({ done: true })).start();
    try {
      await eventually(async () => (await ok.get(task_id)).status === "succeeded", 10_000, "the task to succeed");
    } finally {
      await worker.close();
    }
    assert.deepEqual((await ok.get(task_id)).result, { done: true });
    assert.deepEqual(errors, []);
  });
});
