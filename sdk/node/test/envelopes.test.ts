import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Producer, ValidationError, validateEnvelope } from "../src/index.js";
import { testdata } from "./support.js";

interface Vectors {
  valid: { name: string; envelope: Record<string, unknown> }[];
  invalid: { name: string; envelope: Record<string, unknown>; field: string; code: string; server_only: boolean }[];
}
const vectors = testdata<Vectors>("envelopes.json");

describe("envelopes.json: valid envelopes are accepted", () => {
  for (const v of vectors.valid) {
    test(v.name, () => {
      const wire = validateEnvelope(v.envelope);
      assert.deepEqual(wire, v.envelope, "the wire form of a valid wire envelope is itself");
    });
  }
});

describe("envelopes.json: invalid envelopes are refused before sending, naming the field", () => {
  for (const v of vectors.invalid.filter((v) => !v.server_only)) {
    test(v.name, async () => {
      assert.throws(
        () => validateEnvelope(v.envelope),
        (err: unknown) => {
          assert.ok(err instanceof ValidationError, `expected ValidationError, got ${err}`);
          assert.equal(err.field, v.field);
          assert.equal(err.code, v.code);
          return true;
        },
      );
      // Through the producer, nothing reaches the network: the base URL points nowhere.
      const producer = new Producer({ baseUrl: "http://127.0.0.1:1" });
      await assert.rejects(producer.submit(v.envelope as never), (err: unknown) => {
        assert.ok(err instanceof ValidationError);
        assert.equal(err.field, v.field);
        return true;
      });
    });
  }
});

describe("envelopes.json: server_only cases pass local validation", () => {
  for (const v of vectors.invalid.filter((v) => v.server_only)) {
    test(v.name, () => {
      assert.doesNotThrow(() => validateEnvelope(v.envelope));
    });
  }
});

describe("envelope validation beyond the vectors", () => {
  const base = { task_type: "t", payload_version: 1, payload: {} };

  test("undefined and null optional fields are omitted, never sent as null", () => {
    const wire = validateEnvelope({ ...base, queue: undefined, priority: null, trace_id: undefined });
    assert.deepEqual(wire, base);
    assert.equal(JSON.stringify(wire).includes("null"), false);
  });

  test("a Date schedule_time is sent as UTC RFC 3339 with milliseconds", () => {
    const wire = validateEnvelope({ ...base, schedule_time: new Date(Date.UTC(2025, 8, 11, 4, 45)) });
    assert.equal(wire.schedule_time, "2025-09-11T04:45:00.000Z");
  });

  test("a payload over 64 KiB is payload_too_large", () => {
    assert.throws(() => validateEnvelope({ ...base, payload: { s: "x".repeat(65536) } }), {
      name: "ValidationError",
      field: "payload",
      code: "payload_too_large",
    });
  });

  test("arrays count as nesting levels", () => {
    assert.throws(() => validateEnvelope({ ...base, payload: { a: [[[[[1]]]]] } }), { code: "payload_too_deep" });
    assert.doesNotThrow(() => validateEnvelope({ ...base, payload: { a: [[[[1]]]] } }));
  });

  test("trace_id must be visible ASCII", () => {
    assert.throws(() => validateEnvelope({ ...base, trace_id: "has space" }), { field: "trace_id" });
    assert.throws(() => validateEnvelope({ ...base, trace_id: "" }), { field: "trace_id" });
  });

  test("a batch names the index of the refused envelope and sends nothing", async () => {
    const producer = new Producer({ baseUrl: "http://127.0.0.1:1" });
    await assert.rejects(producer.submitBatch([base, { ...base, priority: 5000 }]), {
      name: "ValidationError",
      field: "priority",
      index: 1,
    });
  });
});
