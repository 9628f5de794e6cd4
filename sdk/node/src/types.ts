import type { ErrorBody } from "./errors.js";
import type { JsonObject } from "./envelope.js";

export type TaskStatus =
  | "scheduled" | "pending" | "running" | "retrying" | "succeeded" | "dead" | "cancelled";

/** The answer to a submit: `duplicate` is true when the same task_id and content was already accepted. */
export interface SubmitResult {
  task_id: string;
  status: TaskStatus;
  duplicate: boolean;
}

/** One item of a batch answer: a SubmitResult, or the error that item alone was refused with. */
export type BatchItemResult = SubmitResult | { error: ErrorBody };

/** The error a worker reported for a failed attempt. */
export interface TaskError {
  type: string;
  message: string;
  stack?: string;
}

/** The envelope as the server answers it, every field filled (times are RFC 3339 UTC). */
export interface StoredEnvelope {
  task_id: string;
  task_type: string;
  queue: string;
  payload_version: number;
  payload: JsonObject;
  schedule_time: string;
  timeout_ms: number;
  max_retries: number;
  retry_count: number;
  priority: number;
  trace_id: string;
  idempotency_key?: string;
}

/** A task as the server stores it (GET /v1/tasks/{id}). */
export interface Task extends StoredEnvelope {
  status: TaskStatus;
  created_at: string;
  updated_at: string;
  next_attempt_at: string | null;
  attempts: number;
  last_error: TaskError | null;
  result: unknown;
  deduplicated?: boolean;
}

export type AttemptOutcome = "succeeded" | "failed" | "lease_expired" | "cancelled";

/** One attempt of a task (GET /v1/tasks/{id}/attempts); `outcome` is null while it runs. */
export interface Attempt {
  attempt: number;
  worker_id: string;
  started_at: string;
  finished_at: string | null;
  outcome: AttemptOutcome | null;
  error: TaskError | null;
  duration_ms: number | null;
  http_status?: number;
  response_excerpt?: string;
}

/** A leased task as a handler receives it: the envelope plus the attempt number (1 = first). */
export interface LeasedTask extends StoredEnvelope {
  attempt: number;
}

/** One lease of POST /v1/leases. */
export interface Lease {
  lease_id: string;
  deadline: string;
  fencing_token: number;
  task: LeasedTask;
}

/** How a failed attempt asks to be retried. */
export type RetryMode = "auto" | "fast" | "backoff" | "never";
