import { DEFAULT_LIMITS, type EnvelopeLimits, type TaskEnvelope, type WireEnvelope, validateEnvelope } from "./envelope.js";
import { type ConnectionOptions, Transport, segment } from "./http.js";
import type { Attempt, BatchItemResult, SubmitResult, Task, TaskStatus } from "./types.js";

export interface ProducerOptions extends ConnectionOptions {
  /** The server's `[limits]`, when they differ from the defaults (64 KiB, depth 5). */
  limits?: Partial<EnvelopeLimits>;
}

/** Search filters of GET /v1/tasks. */
export interface TaskFilter {
  status?: TaskStatus;
  queue?: string;
  task_type?: string;
  trace_id?: string;
  /** 1–1000, default 50. */
  limit?: number;
  cursor?: string;
}

/** The most tasks one POST /v1/tasks/batch carries; longer batches are sent in chunks. */
export const MAX_BATCH = 1000;

/**
 * Submits, reads and cancels tasks. Envelopes are validated before anything is sent
 * (ValidationError); what only the server can judge comes back as ApiError.
 */
export class Producer {
  private readonly http: Transport;
  private readonly limits: EnvelopeLimits;

  constructor(options: ProducerOptions) {
    this.http = new Transport(options);
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
  }

  /** Closes the kept-alive connections (idle ones never keep the process alive anyway). */
  close(): void {
    this.http.destroy();
  }

  /** Checks an envelope without sending it; returns its wire form or throws ValidationError. */
  validate(envelope: TaskEnvelope): WireEnvelope {
    return validateEnvelope(envelope, this.limits);
  }

  /** POST /v1/tasks — `duplicate` is true when this task_id with this content was already accepted. */
  async submit(envelope: TaskEnvelope): Promise<SubmitResult> {
    return this.http.request<SubmitResult>("POST", "/v1/tasks", validateEnvelope(envelope, this.limits));
  }

  /**
   * POST /v1/tasks/batch — every envelope is validated first (nothing is sent if one is
   * invalid; the ValidationError carries its `index`); the server judges each item alone and
   * the answer has one result per envelope, in order.
   */
  async submitBatch(envelopes: readonly TaskEnvelope[]): Promise<BatchItemResult[]> {
    const wire = envelopes.map((e, i) => validateEnvelope(e, this.limits, i));
    const results: BatchItemResult[] = [];
    for (let start = 0; start < wire.length; start += MAX_BATCH) {
      const tasks = wire.slice(start, start + MAX_BATCH);
      const answer = await this.http.request<{ results: BatchItemResult[] }>("POST", "/v1/tasks/batch", { tasks });
      results.push(...answer.results);
    }
    return results;
  }

  /** GET /v1/tasks/{id} */
  async get(taskId: string): Promise<Task> {
    return this.http.request<Task>("GET", `/v1/tasks/${segment(taskId)}`);
  }

  /** GET /v1/tasks/{id}/attempts */
  async attempts(taskId: string): Promise<Attempt[]> {
    const answer = await this.http.request<{ attempts: Attempt[] }>("GET", `/v1/tasks/${segment(taskId)}/attempts`);
    return answer.attempts;
  }

  /** GET /v1/tasks — newest first; pass `next_cursor` back as `cursor` for the next page. */
  async list(filter: TaskFilter = {}): Promise<{ tasks: Task[]; next_cursor: string | null }> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filter)) {
      if (value !== undefined && value !== null) query.set(key, String(value));
    }
    const qs = query.toString();
    return this.http.request("GET", `/v1/tasks${qs ? `?${qs}` : ""}`);
  }

  /** POST /v1/tasks/{id}/cancel — a running task is `409 task_running`, a finished one `409 task_terminal`. */
  async cancel(taskId: string): Promise<Task> {
    return this.http.request<Task>("POST", `/v1/tasks/${segment(taskId)}/cancel`);
  }
}
