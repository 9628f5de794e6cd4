// RunningAttempt alone, with a stub worker: when the attempt's deadline is (clock skew), and
// which reason a handler's signal gets when the server answers an extension with lease_lost.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AckBatcher } from "../src/ack-batcher.js";
import { type AttemptHost, RunningAttempt, type TaskContext, attemptDeadline } from "../src/attempt.js";
import { ApiError, DeadlineExceededError, LeaseLostError } from "../src/errors.js";
import type { Transport } from "../src/http.js";
import type { Lease } from "../src/types.js";

/** A lease of the task's whole timeout_ms; `skewMs` is how far the server's clock is ahead of ours. */
function leaseFor(timeoutMs: number, skewMs = 0): Lease {
  return {
    lease_id: "l-1",
    deadline: new Date(Date.now() + skewMs + timeoutMs).toISOString(),
    fencing_token: 1,
    task: { task_id: "t-1", task_type: "t", queue: "q", payload_version: 1, payload: {}, timeout_ms: timeoutMs, attempt: 1 },
  } as unknown as Lease;
}

/** A worker whose extensions `answerExtend` answers, and whose acks and fails succeed. */
function stubHost(answerExtend: () => Promise<unknown>): AttemptHost {
  return {
    http: {
      request: (_method: string, path: string) => (path.endsWith("/extend") ? answerExtend() : Promise.resolve({})),
    } as unknown as Transport,
    acks: { ack: () => Promise.resolve({ ok: true }) } as unknown as AckBatcher,
    workerId: "w-1",
    leaseMs: undefined,
    finished: () => undefined,
    track: () => undefined,
    report: () => undefined,
  };
}

/** Runs one attempt whose extensions `answerExtend` answers; resolves with its signal's reason. */
function abortReason(lease: Lease, answerExtend: () => Promise<unknown>): Promise<unknown> {
  return new Promise((resolve) => {
    const handler = async (_task: unknown, { signal }: TaskContext) => {
      await new Promise((done) => signal.addEventListener("abort", done, { once: true }));
      resolve(signal.reason);
    };
    const now = Date.now(); // the lease call, answered at once
    new RunningAttempt(stubHost(answerExtend), lease, handler, now, now).start();
  });
}

// A lease call sent at `asked` and answered 300 ms later (a long poll), of a 2 s lease of a 60 s task.
const asked = Date.parse("2025-06-01T12:00:00.000Z");
const received = asked + 300;
const leaseMs = 2_000;
const timeoutMs = 60_000;
const hourMs = 3_600_000;
/** When attemptDeadline says an attempt is due that a server (by its clock) began at `began`. */
const dueIfBegan = (began: number) =>
  attemptDeadline(new Date(began + leaseMs).toISOString(), leaseMs, timeoutMs, asked, received);

test("an attempt the server began during the lease call is due timeout_ms after it began", () => {
  for (const began of [asked + 200, asked, received, asked - 1_000]) {
    assert.equal(dueIfBegan(began), began + timeoutMs, `began ${began - asked} ms after asked`);
  }
});

test("a server clock an hour behind: the attempt is timed from the lease's receipt, not due at once", () => {
  assert.equal(dueIfBegan(asked + 200 - hourMs), received + timeoutMs);
});

test("a server clock an hour ahead: the attempt is timed from the lease's receipt", () => {
  assert.equal(dueIfBegan(asked + 200 + hourMs), received + timeoutMs);
});

test("a beginning just outside the lease call is timed from the lease's receipt", () => {
  for (const began of [asked - 1_001, received + 1]) {
    assert.equal(dueIfBegan(began), received + timeoutMs, `began ${began - asked} ms after asked`);
  }
});

test("an unparseable lease deadline: the attempt is timed from the lease's receipt", () => {
  assert.equal(attemptDeadline("not a time", leaseMs, timeoutMs, asked, received), received + timeoutMs);
});

test("a handler leased from a server an hour behind runs to completion", async () => {
  const lease = leaseFor(10_000, -hourMs);
  const now = Date.now();
  const seen = await new Promise<{ aborted: boolean; deadline: number }>((resolve) => {
    const handler = async (_task: unknown, { signal, deadline }: TaskContext) => {
      await new Promise((done) => setTimeout(done, 20));
      resolve({ aborted: signal.aborted, deadline: deadline.getTime() });
    };
    new RunningAttempt(stubHost(() => Promise.resolve({})), lease, handler, now, now).start();
  });
  assert.equal(seen.aborted, false);
  assert.equal(seen.deadline, now + 10_000);
});

const leaseLost = () => new ApiError(409, { code: "lease_lost", message: "the lease is no longer held" });

test("lease_lost answered to an extension after the deadline reports the deadline, not a lost lease", async () => {
  const lease = leaseFor(60); // extensions every 20 ms
  const deadline = Date.parse(lease.deadline);
  const reason = await abortReason(lease, () => {
    // The answer is read past the deadline, before the deadline timer has had its turn: what a
    // loaded machine does when the server expires the lease as the extension arrives.
    while (Date.now() < deadline + 5);
    return Promise.reject(leaseLost());
  });
  assert.ok(reason instanceof DeadlineExceededError, `reason: ${String(reason)}`);
});

test("lease_lost answered to an extension before the deadline is a lost lease", async () => {
  const reason = await abortReason(leaseFor(10_000), () => Promise.reject(leaseLost()));
  assert.ok(reason instanceof LeaseLostError, `reason: ${String(reason)}`);
});
