import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { WebhookVerificationError, signEvent, verifyWebhook } from "../src/index.js";
import { testdata } from "./support.js";

const events = testdata<{ cases: { name: string; secret: string; timestamp: number; body: string; signature: string }[] }>(
  "event_signatures.json",
);
const webhooks = testdata<{
  tolerance_seconds: number;
  cases: {
    name: string; secrets: string[]; id: string; timestamp: number; body: string; now: number; signature: string;
    valid: boolean; reason?: string;
  }[];
}>("webhook_signatures.json");

describe("event_signatures.json", () => {
  for (const c of events.cases) {
    test(c.name, () => {
      const headers = signEvent({ source: "billing", secret: c.secret, body: c.body, timestamp: c.timestamp });
      assert.deepEqual(headers, {
        "X-Madeira-Source": "billing",
        "X-Madeira-Timestamp": String(c.timestamp),
        "X-Madeira-Signature": c.signature,
      });
      // The same bytes given as a Buffer sign the same.
      const fromBytes = signEvent({ source: "billing", secret: c.secret, body: Buffer.from(c.body), timestamp: c.timestamp });
      assert.equal(fromBytes["X-Madeira-Signature"], c.signature);
    });
  }
});

describe("webhook_signatures.json", () => {
  for (const c of webhooks.cases) {
    test(c.name, () => {
      const verify = () =>
        verifyWebhook({
          secrets: c.secrets,
          headers: { "webhook-id": c.id, "webhook-timestamp": String(c.timestamp), "webhook-signature": c.signature },
          body: c.body,
          now: c.now,
          toleranceSeconds: webhooks.tolerance_seconds,
        });
      if (c.valid) assert.doesNotThrow(verify);
      else assert.throws(verify, WebhookVerificationError, c.reason);
    });
  }

  test("any of several secrets; fetch Headers; default tolerance", () => {
    const c = webhooks.cases[0]!;
    const headers = new Headers({
      "Webhook-Id": c.id,
      "Webhook-Timestamp": String(c.timestamp),
      "Webhook-Signature": c.signature,
    });
    assert.doesNotThrow(() =>
      verifyWebhook({ secrets: ["whsec_bWFkZWlyYS1yb3RhdGlvbi1zZWNyZXQtMg==", ...c.secrets], headers, body: c.body, now: c.now + 300 }),
    );
    assert.throws(() => verifyWebhook({ secrets: c.secrets, headers, body: c.body, now: c.now + 301 }), WebhookVerificationError);
  });

  test("missing headers are refused", () => {
    assert.throws(() => verifyWebhook({ secrets: ["whsec_AAAA"], headers: {}, body: "{}" }), WebhookVerificationError);
  });
});
