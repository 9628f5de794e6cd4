import type { AckBatcher } from "./ack-batcher.js";
import { ApiError, DeadlineExceededError, LeaseLostError, WorkerClosedError } from "./errors.js";
import { retryModeFor, toTaskError } from "./failure.js";
import { type Transport, segment } from "./http.js";
import { withRetries } from "./retry.js";
import type { Lease, LeasedTask, RetryMode, TaskError } from "./types.js";

/** What a handler gets besides the task. */
export interface TaskContext {
  /** Aborted when the attempt's deadline passes, the lease is lost, or the worker closes; `reason` says which. */
  signal: AbortSignal;
  /** When this attempt must be done (`timeout_ms` after it began). */
  deadline: Date;
  leaseId: string;
  workerId: string;
}

/** A task handler: resolve with the result (any JSON value, or nothing) or throw. */
export type Handler = (task: LeasedTask, context: TaskContext) => unknown;

/** What an Attempt needs from the worker that runs it. */
export interface AttemptHost {
  readonly http: Transport;
  readonly acks: AckBatcher;
  readonly workerId: string;
  /** Asked-for lease length, or undefined for the task's timeout_ms. */
  readonly leaseMs: number | undefined;
  /** The attempt no longer holds a slot. */
  finished(attempt: RunningAttempt): void;
  /** A report (ack or fail) still on its way; close waits for these. */
  track(report: Promise<unknown>): void;
  /** Something went wrong in the background. */
  report(err: unknown): void;
}

function isLeaseLost(err: unknown): boolean {
  return err instanceof ApiError && err.code === "lease_lost";
}

/** How much earlier than the lease call the server's clock may say an attempt began and still agree with ours. */
const CLOCK_TOLERANCE_MS = 1_000;

/** When the attempt is due: timeout_ms after it began if the clocks agree, else after receipt (clock skew; Java's rule). */
export function attemptDeadline(
  deadline: string,
  leaseMs: number,
  timeoutMs: number,
  asked: number,
  received: number,
): number {
  const began = Date.parse(deadline) - leaseMs; // the server's clock; NaN if the deadline is not a time
  const clocksAgree = began >= asked - CLOCK_TOLERANCE_MS && began <= received; // false for NaN
  return (clocksAgree ? began : received) + timeoutMs;
}

/**
 * One leased task on its way through a handler: keeps the lease alive, enforces the
 * deadline, and reports the outcome exactly once (ack, fail, or nothing when the lease
 * expired or was lost).
 */
export class RunningAttempt {
  private readonly controller = new AbortController();
  private readonly leaseMs: number;
  private readonly deadline: number;
  private settled = false;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private extendTimer: NodeJS.Timeout | undefined;
  private extending = false;

  constructor(
    private readonly host: AttemptHost,
    readonly lease: Lease,
    private readonly handler: Handler | undefined,
    /** Epoch ms just before the lease call (POST /v1/leases) was sent, and when its answer was read. */
    asked: number,
    received: number,
  ) {
    const timeoutMs = lease.task.timeout_ms;
    this.leaseMs = Math.min(host.leaseMs ?? timeoutMs, timeoutMs);
    this.deadline = attemptDeadline(lease.deadline, this.leaseMs, timeoutMs, asked, received);
  }

  get taskId(): string {
    return this.lease.task.task_id;
  }

  start(): void {
    this.deadlineTimer = setTimeout(() => this.expire(), this.deadline - Date.now());
    this.extendTimer = setInterval(() => this.extend(), Math.max(Math.floor(this.leaseMs / 3), 10));
    const context: TaskContext = {
      signal: this.controller.signal,
      deadline: new Date(this.deadline),
      leaseId: this.lease.lease_id,
      workerId: this.host.workerId,
    };
    const handler = this.handler;
    const run = handler
      ? Promise.resolve().then(() => handler(this.lease.task, context))
      : Promise.reject(new UnhandledTaskTypeError(this.lease.task));
    run.then(
      (result) => this.succeed(result),
      (err: unknown) => this.failWith(err),
    );
  }

  /** The worker is closing and the grace period is over: hand the task back for a fast retry. */
  giveBack(): void {
    if (!this.settle()) return;
    this.controller.abort(new WorkerClosedError("the worker closed before the handler finished"));
    this.sendFail(
      { type: "WorkerClosedError", message: "the worker closed before the handler finished" },
      "fast",
    );
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.deadlineTimer);
    clearInterval(this.extendTimer);
    this.host.finished(this);
    return true;
  }

  private succeed(result: unknown): void {
    if (!this.settle()) return; // late: the deadline passed or the lease was lost
    let ack: Promise<unknown>;
    try {
      ack = this.host.acks.ack(this.lease.lease_id, result).then((outcome) => {
        if (outcome.ok) return;
        const lost = new ApiError(409, outcome.error);
        if (outcome.error.code === "lease_lost") this.lost(lost);
        this.host.report(lost);
      });
    } catch (err) {
      // The result is not JSON (a BigInt, a cycle): report that as the failure.
      this.sendFail(toTaskError(new TypeError(`handler result is not JSON: ${(err as Error).message}`)), "auto");
      return;
    }
    this.host.track(ack.catch((err: unknown) => this.host.report(err)));
  }

  private failWith(err: unknown): void {
    if (!this.settle()) return;
    this.sendFail(toTaskError(err), retryModeFor(err));
  }

  private sendFail(error: TaskError, retry: RetryMode): void {
    const path = `/v1/leases/${segment(this.lease.lease_id)}/fail`;
    const report = withRetries(() => this.host.http.request("POST", path, { error, retry })).catch((err: unknown) => {
      if (isLeaseLost(err)) this.lost(err as ApiError);
      this.host.report(err);
    });
    this.host.track(report);
  }

  private expire(): void {
    if (!this.settle()) return;
    // Not acked, not failed: the server records the attempt as lease_expired.
    this.controller.abort(
      new DeadlineExceededError(`task ${this.taskId} passed its deadline (timeout_ms ${this.lease.task.timeout_ms})`),
    );
  }

  private lost(cause: ApiError): void {
    if (!this.controller.signal.aborted) {
      this.controller.abort(new LeaseLostError(`lease of task ${this.taskId} was lost`, { cause }));
    }
  }

  private extend(): void {
    if (this.settled || this.extending) return;
    this.extending = true;
    const path = `/v1/leases/${segment(this.lease.lease_id)}/extend`;
    this.host.http
      .request("POST", path, { extend_ms: this.leaseMs })
      .then(
        () => undefined,
        (err: unknown) => {
          if (this.settled) return; // finished meanwhile; the outcome report decides
          if (isLeaseLost(err)) {
            if (Date.now() >= this.deadline) {
              // The server expired the lease at the deadline, and this answer reached the event
              // loop before the deadline timer did (I/O is read before due timers run): the
              // deadline is the reason.
              this.expire();
            } else {
              this.settle();
              this.lost(err as ApiError);
            }
          }
          this.host.report(err);
        },
      )
      .finally(() => {
        this.extending = false;
      });
  }
}

/** A leased task whose type has no handler on this worker (the server routes by task_types, so rare). */
export class UnhandledTaskTypeError extends Error {
  constructor(task: LeasedTask) {
    super(`no handler for ${task.task_type} v${task.payload_version}`);
    this.name = "UnhandledTaskTypeError";
  }
}
