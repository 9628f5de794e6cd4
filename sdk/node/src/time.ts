import { ValidationError } from "./errors.js";

/** A point in time Madeira can schedule at: a `Date` (always an instant) or an RFC 3339 string with `Z` or an offset. */
export type Instant = Date | string;

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** True when `s` is an RFC 3339 date-time that carries `Z` or a numeric offset. */
export function isZonedRfc3339(s: string): boolean {
  const m = RFC3339.exec(s);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number, number, number, number, number, number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (m[8] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  return true;
}

/**
 * The wire form of a schedule time: a `Date` becomes UTC with milliseconds
 * (`2025-09-11T04:45:00.000Z`); a string with an offset is sent as given.
 * Anything else — a number, a string without an offset, an invalid Date — is refused.
 */
export function toRfc3339(value: unknown, field = "schedule_time"): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) {
      throw new ValidationError(field, "invalid_schedule_time", "is an invalid Date");
    }
    return value.toISOString();
  }
  if (typeof value === "string") {
    if (!isZonedRfc3339(value)) {
      throw new ValidationError(
        field,
        "invalid_schedule_time",
        "must be RFC 3339 with a zone offset or Z, e.g. 2025-09-11T12:45:00+08:00",
      );
    }
    return value;
  }
  throw new ValidationError(
    field,
    "invalid_schedule_time",
    `must be a Date or an RFC 3339 string with an offset, not ${typeof value}`,
  );
}
