import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { AckBatcher } from "./ack-batcher.js";
import { RunningAttempt, type Handler } from "./attempt.js";
import { type ConnectionOptions, Transport } from "./http.js";
import { sleep } from "./retry.js";
import type { Lease } from "./types.js";
import { SDK_VERSION } from "./version.js";

export interface WorkerOptions extends ConnectionOptions {
  /** Queues to lease from; default `["default"]`. */
  queues?: string[];
  /** How many handlers run at once; default 8. */
  slots?: number;
  /** Default `<host>-<pid>-<random>`. */
  workerId?: string;
  /** Long-poll length of POST /v1/leases; default 5000 ms. */
  waitMs?: number;
  /** Lease length asked for; default the task's timeout_ms. Extended every leaseMs/3 while a handler runs. */
  leaseMs?: number;
  /** Heartbeat period; default 5000 ms (at most 10 000). */
  heartbeatMs?: number;
  /** How long close() lets running handlers finish before handing them back; default 10 000 ms. */
  graceMs?: number;
  /** Background failures: lease polls, heartbeats, lost acks. Default: console.error. */
  onError?: (err: unknown) => void;
}

type State = "new" | "running" | "closing" | "closed";

/**
 * Leases tasks of the registered types and runs them in `slots` concurrent handlers.
 *
 *   const worker = new Worker({ baseUrl, queues: ["orders"], slots: 8 });
 *   worker.handle("order.close_timeout", [1, 2], async (task, { signal }) => ({ closed: true }));
 *   worker.start();
 *   worker.closeOnSignals();
 */
export class Worker {
  readonly workerId: string;
  readonly http: Transport;
  readonly acks: AckBatcher;
  readonly leaseMs: number | undefined;

  private readonly queues: string[];
  private readonly slots: number;
  private readonly waitMs: number;
  private readonly heartbeatMs: number;
  private readonly graceMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly handlers = new Map<string, Map<number, Handler>>();

  private state: State = "new";
  private readonly active = new Set<RunningAttempt>();
  private readonly reports = new Set<Promise<unknown>>();
  private readonly stop = new AbortController();
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: WorkerOptions) {
    this.http = new Transport(options);
    this.acks = new AckBatcher(this.http);
    this.queues = options.queues ?? ["default"];
    this.slots = options.slots ?? 8;
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
    this.waitMs = options.waitMs ?? 5000;
    this.leaseMs = options.leaseMs;
    this.heartbeatMs = Math.min(options.heartbeatMs ?? 5000, 10_000);
    this.graceMs = options.graceMs ?? 10_000;
    this.onError = options.onError ?? ((err) => console.error("madeira worker:", err));
    if (!Number.isInteger(this.slots) || this.slots < 1) throw new RangeError("slots must be an integer ≥ 1");
    if (this.queues.length === 0) throw new RangeError("queues must name at least one queue");
    if (!Number.isInteger(this.waitMs) || this.waitMs < 0 || this.waitMs > 30_000) {
      throw new RangeError("waitMs must be an integer in 0 … 30000");
    }
    if (this.leaseMs !== undefined && (!Number.isInteger(this.leaseMs) || this.leaseMs < 1)) {
      throw new RangeError("leaseMs must be a positive integer");
    }
  }

  /** Registers `handler` for `taskType` at the given payload versions (the server routes only those). */
  handle(taskType: string, versions: number | readonly number[], handler: Handler): this {
    if (this.state !== "new") throw new Error("register handlers before start()");
    const list = typeof versions === "number" ? [versions] : versions;
    if (list.length === 0) throw new RangeError("name at least one payload version");
    let byVersion = this.handlers.get(taskType);
    if (!byVersion) this.handlers.set(taskType, (byVersion = new Map()));
    for (const v of list) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`payload version ${v} is not an integer ≥ 1`);
      byVersion.set(v, handler);
    }
    return this;
  }

  /** Starts leasing and heartbeats. Resolve close() to stop. */
  start(): this {
    if (this.state !== "new") throw new Error(`worker is ${this.state}`);
    if (this.handlers.size === 0) throw new Error("register at least one handler before start()");
    this.state = "running";
    this.heartbeat();
    this.heartbeatTimer = setInterval(() => this.heartbeat(), this.heartbeatMs);
    this.heartbeatTimer.unref();
    this.loop = this.pollLoop();
    return this;
  }

  /** How many handlers are running now. */
  get busy(): number {
    return this.active.size;
  }

  /**
   * Graceful close: stop leasing, let running handlers finish within `graceMs`, hand the
   * rest back with `retry: "fast"` (their signals abort with WorkerClosedError), then flush
   * every pending ack and fail.
   */
  close(graceMs = this.graceMs): Promise<void> {
    this.closing ??= this.shutdown(graceMs);
    return this.closing;
  }

  /** Closes the worker on the first of `signals`; answers a function that removes the listeners. */
  closeOnSignals(signals: readonly NodeJS.Signals[] = ["SIGTERM", "SIGINT"]): () => void {
    const onSignal = () => {
      remove();
      this.close().catch((err: unknown) => this.onError(err));
    };
    const remove = () => {
      for (const s of signals) process.removeListener(s, onSignal);
    };
    for (const s of signals) process.once(s, onSignal);
    return remove;
  }

  private async shutdown(graceMs: number): Promise<void> {
    const wasRunning = this.state === "running";
    this.state = "closing";
    clearInterval(this.heartbeatTimer);
    this.stop.abort();
    this.wake();
    if (wasRunning) await this.loop;
    const graceOver = Date.now() + graceMs;
    while (this.active.size > 0 && Date.now() < graceOver) {
      await Promise.race([this.slotFreed(), sleep(graceOver - Date.now())]);
    }
    for (const attempt of [...this.active]) attempt.giveBack();
    while (this.reports.size > 0) await Promise.allSettled([...this.reports]);
    await this.acks.flush();
    this.http.destroy();
    this.state = "closed";
  }

  private taskTypes(): Record<string, number[]> {
    const types: Record<string, number[]> = {};
    for (const [type, byVersion] of this.handlers) types[type] = [...byVersion.keys()].sort((a, b) => a - b);
    return types;
  }

  private async pollLoop(): Promise<void> {
    const taskTypes = this.taskTypes();
    let backoffMs = 0;
    while (this.state === "running") {
      const free = this.slots - this.active.size;
      if (free <= 0) {
        await this.slotFreed();
        continue;
      }
      const body: Record<string, unknown> = {
        worker_id: this.workerId,
        queues: this.queues,
        task_types: taskTypes,
        max_tasks: Math.min(free, 100),
        wait_ms: this.waitMs,
      };
      if (this.leaseMs !== undefined) body.lease_ms = this.leaseMs;
      try {
        const asked = Date.now();
        const answer = await this.http.request<{ leases: Lease[] }>("POST", "/v1/leases", body, this.stop.signal);
        const received = Date.now();
        backoffMs = 0;
        for (const lease of answer.leases) this.run(lease, asked, received);
      } catch (err) {
        if (this.stop.signal.aborted) break;
        this.onError(err);
        backoffMs = Math.min(Math.max(backoffMs * 2, 100), 5000);
        await sleep(backoffMs * (0.5 + Math.random()), this.stop.signal);
      }
    }
  }

  /** Runs a lease from a POST /v1/leases sent at `asked` and answered at `received` (epoch ms). */
  private run(lease: Lease, asked: number, received: number): void {
    const handler = this.handlers.get(lease.task.task_type)?.get(lease.task.payload_version);
    const attempt = new RunningAttempt(this, lease, handler, asked, received);
    this.active.add(attempt);
    attempt.start();
  }

  /** Called by an Attempt when it stops holding its slot. */
  finished(attempt: RunningAttempt): void {
    this.active.delete(attempt);
    this.wake();
  }

  track(report: Promise<unknown>): void {
    this.reports.add(report);
    void report.finally(() => this.reports.delete(report));
  }

  report(err: unknown): void {
    this.onError(err);
  }

  private slotFreed(): Promise<void> {
    return new Promise((resolve) => {
      const previous = this.wakeUp;
      this.wakeUp = () => {
        previous?.();
        resolve();
      };
    });
  }

  private wake(): void {
    const wakeUp = this.wakeUp;
    this.wakeUp = undefined;
    wakeUp?.();
  }

  private heartbeat(): void {
    const body = { worker_id: this.workerId, language: "node", sdk_version: SDK_VERSION, queues: this.queues };
    this.http.request("POST", "/v1/workers/heartbeat", body).catch((err: unknown) => this.onError(err));
  }
}
