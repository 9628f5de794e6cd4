import { ApiError, TransportError } from "./errors.js";

/** True for failures worth repeating the same request: no answer, or the server unavailable. */
export function isRetryable(err: unknown): boolean {
  return err instanceof TransportError || (err instanceof ApiError && err.status >= 500);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Runs `call`, repeating it after 100, 200, 400 … ms (with jitter) while it fails with a
 * retryable error, at most `attempts` times in all.
 */
export async function withRetries<T>(call: () => Promise<T>, attempts = 4): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await call();
    } catch (err) {
      if (n >= attempts || !isRetryable(err)) throw err;
      const retryAfterMs = err instanceof ApiError && err.retryAfter !== undefined ? err.retryAfter * 1000 : 0;
      await sleep(Math.max(retryAfterMs, 100 * 2 ** (n - 1) * (0.5 + Math.random())));
    }
  }
}
