import { ApiError, type ErrorBody } from "./errors.js";
import { Transport } from "./http.js";
import { withRetries } from "./retry.js";

/** What the server said about one ack. */
export type AckOutcome = { ok: true } | { ok: false; error: ErrorBody };

interface PendingAck {
  json: string;
  settle: (outcome: AckOutcome) => void;
  fail: (err: unknown) => void;
}

/** POST /v1/leases/ack takes at most this many acks. */
const MAX_ACKS = 1000;

/**
 * Coalesces acks into POST /v1/leases/ack batches: an ack is sent at once when no batch is
 * in flight; acks that arrive meanwhile ride together in the next batch.
 */
export class AckBatcher {
  private queue: PendingAck[] = [];
  private inFlight = 0;
  private idle: (() => void)[] = [];

  constructor(
    private readonly http: Transport,
    private readonly maxInFlight = 1,
  ) {}

  /** Queues one ack; resolves with the server's answer for that lease. */
  ack(leaseId: string, result: unknown): Promise<AckOutcome> {
    const json = JSON.stringify(result === undefined ? { lease_id: leaseId } : { lease_id: leaseId, result });
    return new Promise((settle, fail) => {
      this.queue.push({ json, settle, fail });
      this.pump();
    });
  }

  /** Resolves when every queued ack has been answered. */
  flush(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.queue.splice(0, MAX_ACKS);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.pump();
        if (this.queue.length === 0 && this.inFlight === 0) {
          for (const resolve of this.idle.splice(0)) resolve();
        }
      });
    }
  }

  private async send(batch: PendingAck[]): Promise<void> {
    const body = `{"acks":[${batch.map((a) => a.json).join(",")}]}`;
    try {
      const answer = await withRetries(() =>
        this.http.send<{ results: { lease_id: string; status?: string; error?: ErrorBody }[] }>(
          "POST", "/v1/leases/ack", body,
        ),
      );
      batch.forEach((pending, i) => {
        const item = answer.results[i];
        if (item?.error) pending.settle({ ok: false, error: item.error });
        else if (item) pending.settle({ ok: true });
        else pending.fail(new ApiError(200, { code: "missing_result", message: `no result for ack ${i} of the batch` }));
      });
    } catch (err) {
      for (const pending of batch) pending.fail(err);
    }
  }
}
