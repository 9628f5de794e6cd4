import { createHmac, timingSafeEqual } from "node:crypto";
import { MadeiraError } from "./errors.js";

/** A raw body exactly as sent or received: the signature covers these bytes. */
export type RawBody = string | Uint8Array;

function bytes(body: RawBody): Buffer {
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

function unixSeconds(t: Date | number | undefined): number {
  if (t === undefined) return Math.floor(Date.now() / 1000);
  if (t instanceof Date) return Math.floor(t.getTime() / 1000);
  if (!Number.isInteger(t)) throw new TypeError("timestamp must be whole UNIX seconds or a Date");
  return t;
}

export interface SignEventOptions {
  /** The source id configured on the server (`[[sources]] id`). */
  source: string;
  /** One of that source's secrets. */
  secret: string;
  /** The exact body bytes that will be POSTed to /v1/events. */
  body: RawBody;
  /** When the event is signed; default now. */
  timestamp?: Date | number;
}

/** The three headers of a signed POST /v1/events. */
export interface EventHeaders {
  "X-Madeira-Source": string;
  "X-Madeira-Timestamp": string;
  "X-Madeira-Signature": string;
}

/** Signs an event for POST /v1/events: `sha256=` + hex HMAC-SHA256(secret, timestamp + "\n" + body). */
export function signEvent(options: SignEventOptions): EventHeaders {
  const timestamp = String(unixSeconds(options.timestamp));
  const mac = createHmac("sha256", Buffer.from(options.secret, "utf8"));
  mac.update(`${timestamp}\n`, "utf8");
  mac.update(bytes(options.body));
  return {
    "X-Madeira-Source": options.source,
    "X-Madeira-Timestamp": timestamp,
    "X-Madeira-Signature": `sha256=${mac.digest("hex")}`,
  };
}

/** Thrown by verifyWebhook when a delivery must not be trusted. */
export class WebhookVerificationError extends MadeiraError {}

/** Request headers as fetch (`Headers`) or node:http (`IncomingHttpHeaders`) give them. */
export type HeaderSource =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(" ") : value;
  }
  return undefined;
}

export interface VerifyWebhookOptions {
  /** The endpoint's secrets (`whsec_` + base64); several while rotating. */
  secrets: string | readonly string[];
  /** The delivery's headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`. */
  headers: HeaderSource;
  /** The raw body bytes, before any JSON parsing. */
  body: RawBody;
  /** Allowed clock difference; default 300 s. */
  toleranceSeconds?: number;
  /** The receiver's clock; default now. */
  now?: Date | number;
}

function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
}

/**
 * Verifies a Standard Webhooks delivery: the timestamp is within the tolerance and at least
 * one `v1,` signature matches one of the secrets (constant-time compare). Throws
 * WebhookVerificationError otherwise.
 */
export function verifyWebhook(options: VerifyWebhookOptions): void {
  const id = header(options.headers, "webhook-id");
  const timestamp = header(options.headers, "webhook-timestamp");
  const signatures = header(options.headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not UNIX seconds");
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(unixSeconds(options.now) - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError("timestamp outside tolerance");
  }
  const candidates = signatures
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => Buffer.from(s.slice(3), "base64"));
  if (candidates.length === 0) throw new WebhookVerificationError("no v1 signature");

  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), bytes(options.body)]);
  const secrets = typeof options.secrets === "string" ? [options.secrets] : options.secrets;
  let matched = false;
  for (const secret of secrets) {
    const expected = createHmac("sha256", secretKey(secret)).update(signed).digest();
    for (const candidate of candidates) {
      // Every pair is compared, so the time taken does not tell which one matched.
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError("no signature matches a known secret");
}
