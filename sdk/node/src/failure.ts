import { PermanentError, TransientError } from "./errors.js";
import type { RetryMode, TaskError } from "./types.js";

const MAX_MESSAGE = 4096;
const MAX_STACK = 8192;

/** The error class name reported for a thrown value: an explicit `name`, else the constructor's. */
export function errorType(err: unknown): string {
  if (err instanceof Error) {
    if (err.name && err.name !== "Error") return err.name;
    const ctor = (err as { constructor?: { name?: string } }).constructor?.name;
    return ctor && ctor !== "Object" ? ctor : "Error";
  }
  return "Error";
}

/** The `error` body of POST /v1/leases/{id}/fail for a thrown value. */
export function toTaskError(err: unknown): TaskError {
  if (err instanceof Error) {
    const body: TaskError = { type: errorType(err), message: err.message.slice(0, MAX_MESSAGE) };
    if (typeof err.stack === "string" && err.stack !== "") body.stack = err.stack.slice(0, MAX_STACK);
    return body;
  }
  let message: string;
  try {
    message = typeof err === "string" ? err : JSON.stringify(err) ?? String(err);
  } catch {
    message = String(err);
  }
  return { type: "Error", message: message.slice(0, MAX_MESSAGE) };
}

/** PermanentError → "never", TransientError → "fast", anything else → "auto". */
export function retryModeFor(err: unknown): RetryMode {
  if (err instanceof PermanentError) return "never";
  if (err instanceof TransientError) return "fast";
  return "auto";
}
