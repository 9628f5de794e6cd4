import { ValidationError } from "./errors.js";
import { type Instant, toRfc3339 } from "./time.js";

/** A JSON object: what a payload (and usually a result) is. */
export type JsonObject = { [key: string]: unknown };

/** A task as a producer submits it (SPEC §2). Omit what you do not set; never pass `null`. */
export interface TaskEnvelope {
  /** 1–128 of `[A-Za-z0-9._:-]`; the server makes a UUIDv7 when absent. */
  task_id?: string;
  /** `^[a-z0-9][a-z0-9_.-]{0,127}$` */
  task_type: string;
  /** Same pattern as `task_type`; default `default`. */
  queue?: string;
  /** Integer ≥ 1. */
  payload_version: number;
  /** A JSON object, depth ≤ 5 (the object itself is 1), ≤ 64 KiB encoded. */
  payload: JsonObject;
  /** A `Date` or an RFC 3339 string with `Z` or an offset; past or absent = now. */
  schedule_time?: Instant;
  /** 100 … 86 400 000, default 30 000. */
  timeout_ms?: number;
  /** 0 … 100, default 3. */
  max_retries?: number;
  /** Server-owned; only 0 may be sent. */
  retry_count?: 0;
  /** 0 … 1000, default 100; larger runs first. */
  priority?: number;
  /** 1–128 visible ASCII characters; made when absent. */
  trace_id?: string;
  /** ≤ 200 characters. */
  idempotency_key?: string;
}

/** The envelope exactly as it goes on the wire (schedule_time as an RFC 3339 string). */
export type WireEnvelope = Omit<TaskEnvelope, "schedule_time"> & { schedule_time?: string };

/** Limits the server is configured with (`[limits]`); the defaults are the server's. */
export interface EnvelopeLimits {
  maxPayloadBytes: number;
  maxDepth: number;
}

export const DEFAULT_LIMITS: EnvelopeLimits = { maxPayloadBytes: 65536, maxDepth: 5 };

const NAME = /^[a-z0-9][a-z0-9_.-]{0,127}$/;
const TASK_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TRACE_ID = /^[\x21-\x7e]{1,128}$/;

const FIELDS = new Set([
  "task_id", "task_type", "queue", "payload_version", "payload", "schedule_time",
  "timeout_ms", "max_retries", "retry_count", "priority", "trace_id", "idempotency_key",
]);

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Nesting depth of a JSON value: scalars 0, an object or array 1 + its deepest child. Stops counting past `limit`. */
function depth(v: unknown, limit: number): number {
  if (typeof v !== "object" || v === null) return 0;
  if (limit < 0) return 1;
  let deepest = 0;
  for (const child of Array.isArray(v) ? v : Object.values(v)) {
    deepest = Math.max(deepest, depth(child, limit - 1));
    if (deepest > limit) break;
  }
  return 1 + deepest;
}

function integerIn(env: JsonObject, field: string, min: number, max: number, index?: number): void {
  const v = env[field];
  if (v === undefined) return;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new ValidationError(field, "invalid_field", `must be an integer in ${min} … ${max}`, index);
  }
}

function stringMatching(env: JsonObject, field: string, re: RegExp, rule: string, index?: number): void {
  const v = env[field];
  if (v === undefined) return;
  if (typeof v !== "string" || !re.test(v)) {
    throw new ValidationError(field, "invalid_field", `must be ${rule}`, index);
  }
}

/**
 * Checks an envelope the way the server would, for everything the server's answer does
 * not depend on (schemas, `max_delay` and duplicates are judged by the server), and returns
 * its wire form: `undefined` and `null` fields dropped, `schedule_time` as RFC 3339.
 * Throws a ValidationError naming the field.
 */
export function validateEnvelope(
  input: unknown,
  limits: EnvelopeLimits = DEFAULT_LIMITS,
  index?: number,
): WireEnvelope {
  if (!isObject(input)) {
    throw new ValidationError("", "invalid_json", "an envelope must be an object", index);
  }
  const env: JsonObject = {};
  for (const [key, value] of Object.entries(input)) {
    if (!FIELDS.has(key)) throw new ValidationError(key, "unknown_field", "is not an envelope field", index);
    if (value !== undefined && value !== null) env[key] = value;
  }
  for (const field of ["task_type", "payload_version", "payload"]) {
    if (env[field] === undefined) throw new ValidationError(field, "missing_field", "is required", index);
  }

  stringMatching(env, "task_id", TASK_ID, "1–128 of [A-Za-z0-9._:-]", index);
  stringMatching(env, "task_type", NAME, "^[a-z0-9][a-z0-9_.-]{0,127}$", index);
  stringMatching(env, "queue", NAME, "^[a-z0-9][a-z0-9_.-]{0,127}$", index);
  integerIn(env, "payload_version", 1, Number.MAX_SAFE_INTEGER, index);

  const payload = env.payload;
  if (!isObject(payload)) throw new ValidationError("payload", "invalid_field", "must be a JSON object", index);
  if (depth(payload, limits.maxDepth) > limits.maxDepth) {
    throw new ValidationError("payload", "payload_too_deep", `nests deeper than ${limits.maxDepth}`, index);
  }
  let encoded: string;
  try {
    encoded = JSON.stringify(payload);
  } catch (err) {
    throw new ValidationError("payload", "invalid_field", `is not JSON: ${(err as Error).message}`, index);
  }
  if (Buffer.byteLength(encoded, "utf8") > limits.maxPayloadBytes) {
    throw new ValidationError("payload", "payload_too_large", `is over ${limits.maxPayloadBytes} bytes encoded`, index);
  }

  if (env.schedule_time !== undefined) {
    try {
      env.schedule_time = toRfc3339(env.schedule_time);
    } catch (err) {
      if (err instanceof ValidationError) {
        throw new ValidationError(err.field, err.code, err.message.replace(/^[^:]*: /, ""), index);
      }
      throw err;
    }
  }
  integerIn(env, "timeout_ms", 100, 86_400_000, index);
  integerIn(env, "max_retries", 0, 100, index);
  integerIn(env, "retry_count", 0, 0, index);
  integerIn(env, "priority", 0, 1000, index);
  stringMatching(env, "trace_id", TRACE_ID, "1–128 visible ASCII characters", index);
  const key = env.idempotency_key;
  if (key !== undefined && (typeof key !== "string" || key === "" || [...key].length > 200 || /[\x00-\x1f\x7f]/.test(key))) {
    throw new ValidationError("idempotency_key", "invalid_field", "must be a string of 1-200 characters, none of them a control character", index);
  }
  return env as unknown as WireEnvelope;
}
