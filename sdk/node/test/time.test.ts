import assert from "node:assert/strict";
import { test } from "node:test";
import { ValidationError, isZonedRfc3339, toRfc3339 } from "../src/index.js";

test("a Date is always an instant, sent in UTC with milliseconds", () => {
  assert.equal(toRfc3339(new Date("2025-09-11T12:45:00+08:00")), "2025-09-11T04:45:00.000Z");
});

test("strings with Z or an offset are sent as given", () => {
  for (const s of ["2025-09-11T12:45:00+08:00", "2025-09-11T04:45:00Z", "2025-09-11T04:45:00.123456-03:30", "2024-02-29t00:00:00z"]) {
    assert.equal(toRfc3339(s), s);
  }
});

test("naive strings, numbers and invalid values are refused", () => {
  const refused: unknown[] = [
    "2025-09-11T12:45:00", "2025-09-11", "2025-09-11 12:45:00Z", "2025-02-30T00:00:00Z", "2025-13-01T00:00:00Z",
    "2025-09-11T24:00:00Z", "2025-09-11T12:45:00+0800", 1757565900, 1757565900000, new Date(NaN), null, {},
  ];
  for (const value of refused) {
    assert.throws(() => toRfc3339(value), (err: unknown) => {
      assert.ok(err instanceof ValidationError, `${String(value)}`);
      assert.equal(err.field, "schedule_time");
      assert.equal(err.code, "invalid_schedule_time");
      return true;
    });
  }
});

test("isZonedRfc3339", () => {
  assert.equal(isZonedRfc3339("2025-09-11T12:45:00-00:00"), true);
  assert.equal(isZonedRfc3339("2025-09-11T12:45:00+24:00"), false);
});
