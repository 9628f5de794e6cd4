/** The root of every error the SDK itself throws. */
export class MadeiraError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * An envelope (or another request) refused before anything was sent.
 * `field` names the offending field; `code` is the code the server would have answered.
 */
export class ValidationError extends MadeiraError {
  readonly field: string;
  readonly code: string;
  /** Position in a batch, when the envelope was one item of a batch submit. */
  readonly index: number | undefined;

  constructor(field: string, code: string, message: string, index?: number) {
    super(index === undefined ? `${field}: ${message}` : `tasks[${index}].${field}: ${message}`);
    this.field = field;
    this.code = code;
    this.index = index;
  }
}

/** The body of a Madeira error answer: `{"error":{"code","message","field"?}}`. */
export interface ErrorBody {
  code: string;
  message: string;
  field?: string;
}

/** A 4xx/5xx answer from the server, its `code`, `field` and `message` passed on unchanged. */
export class ApiError extends MadeiraError {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  /** Seconds from a `Retry-After` header (503 unavailable), when the server sent one. */
  readonly retryAfter: number | undefined;

  constructor(status: number, body: ErrorBody, retryAfter?: number) {
    super(`${status} ${body.code}: ${body.message}${body.field ? ` (field ${body.field})` : ""}`);
    this.status = status;
    this.code = body.code;
    this.field = body.field;
    this.retryAfter = retryAfter;
  }
}

/** The server could not be reached, or answered something that is not Madeira's protocol. */
export class TransportError extends MadeiraError {}

/**
 * Throw from a handler when retrying cannot help (bad input, business rule):
 * the task is failed with `retry: "never"` and goes dead at once.
 */
export class PermanentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Throw from a handler for a blip worth retrying at once (network, lock conflict):
 * the task is failed with `retry: "fast"`.
 */
export class TransientError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The reason of a handler's AbortSignal when the attempt's deadline (`timeout_ms`) passed. */
export class DeadlineExceededError extends MadeiraError {}

/** The reason of a handler's AbortSignal when the server answered `409 lease_lost`. */
export class LeaseLostError extends MadeiraError {}

/** The reason of a handler's AbortSignal when the worker closed and the grace period ran out. */
export class WorkerClosedError extends MadeiraError {}
