// RunningAttempt alone, with a stub worker: which reason a handler's signal gets when the
// server answers an extension with lease_lost.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AckBatcher } from "../src/ack-batcher.js";
import { type AttemptHost, RunningAttempt } from "../src/attempt.js";
import { ApiError, DeadlineExceededError, LeaseLostError } from "../src/errors.js";
import type { Transport } from "../src/http.js";
import type { Lease } from "../src/types.js";

function leaseFor(timeoutMs: number): Lease {
  return {
    lease_id: "l-1",
    deadline: new Date(Date.now() + timeoutMs).toISOString(),
    fencing_token: 1,
    task: { task_id: "t-1", task_type: "t", queue: "q", payload_version: 1, payload: {}, timeout_ms: timeoutMs, attempt: 1 },
  } as unknown as Lease;
}

/** Runs one attempt whose extensions `answerExtend` answers; resolves with its signal's reason. */
function abortReason(lease: Lease, answerExtend: () => Promise<unknown>): Promise<unknown> {
  return new Promise((resolve) => {
    const host: AttemptHost = {
      http: {
        request: (_method: string, path: string) => (path.endsWith("/extend") ? answerExtend() : Promise.resolve({})),
      } as unknown as Transport,
      acks: {} as AckBatcher,
      workerId: "w-1",
      leaseMs: undefined,
      finished: () => undefined,
      track: () => undefined,
      report: () => undefined,
    };
    const attempt = new RunningAttempt(host, lease, async (_task, { signal }) => {
      await new Promise((done) => signal.addEventListener("abort", done, { once: true }));
      resolve(signal.reason);
    });
    attempt.start();
  });
}

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
