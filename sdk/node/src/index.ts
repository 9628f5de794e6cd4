export { Producer, type ProducerOptions, type TaskFilter, MAX_BATCH } from "./producer.js";
export { Worker, type WorkerOptions } from "./worker.js";
export type { Handler, TaskContext } from "./attempt.js";
export {
  MadeiraError, ValidationError, ApiError, TransportError, PermanentError, TransientError,
  DeadlineExceededError, LeaseLostError, WorkerClosedError, type ErrorBody,
} from "./errors.js";
export {
  type TaskEnvelope, type WireEnvelope, type JsonObject, type EnvelopeLimits, DEFAULT_LIMITS, validateEnvelope,
} from "./envelope.js";
export { type Instant, toRfc3339, isZonedRfc3339 } from "./time.js";
export {
  signEvent, verifyWebhook, WebhookVerificationError,
  type SignEventOptions, type EventHeaders, type VerifyWebhookOptions, type HeaderSource, type RawBody,
} from "./signatures.js";
export type { ConnectionOptions } from "./http.js";
export type {
  StoredEnvelope, Task, TaskStatus, Attempt, AttemptOutcome, SubmitResult, BatchItemResult, TaskError, LeasedTask,
  Lease, RetryMode,
} from "./types.js";
export { SDK_VERSION } from "./version.js";
