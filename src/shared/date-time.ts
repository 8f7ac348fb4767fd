import { utcTime, wallTimeToInstant, type WallReading } from './time-zones.js';

const pattern = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Whether `value` is a date-time without an offset (a wall time that needs a zone). */
export const isWallTime = (value: string): boolean => {
  const match = pattern.exec(value);
  return match !== null && match[8] === undefined;
};

/**
 * An ISO 8601 date-time as an ISO string in UTC with milliseconds, or undefined when it is not
 * one or names a date or time that does not exist (February 30, 25:00, offset +24:00).
 * Without an offset it is a wall time on the clocks of `timeZone` (an IANA name), one that
 * occurs twice or never read as `reading` says.
 * A leap second (RFC 3339 5.7: second 60 where the time is 23:59 in UTC) is a valid date-time;
 * an instant here has no 61st second, so it is the last millisecond of its minute, which keeps
 * the order of times (docs/identifiers.md, Date-times).
 */
export function parseDateTime(value: string, timeZone: string, reading: WallReading = 'first'): string | undefined {
  const match = pattern.exec(value);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second = 0] = match.slice(1, 7).map((part) => (part === undefined ? undefined : Number(part))) as number[];
  const leapSecond = second === 60;
  const ms = leapSecond ? 999 : match[7] ? Number(match[7].slice(0, 3).padEnd(3, '0')) : 0;
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysIn(year!, month!)) return undefined;
  if (hour! > 23 || minute! > 59 || second > 60) return undefined;
  const wall = utcTime(year!, month! - 1, day!, hour!, minute!, leapSecond ? 59 : second, ms);
  const offset = match[8];
  let instant: number;
  if (offset === undefined) {
    instant = wallTimeToInstant(wall, timeZone, reading);
  } else if (offset.toUpperCase() === 'Z') {
    instant = wall;
  } else {
    const digits = offset.slice(1).replace(':', '');
    const hours = Number(digits.slice(0, 2));
    const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
    if (hours > 23 || minutes > 59) return undefined;
    instant = wall - (offset[0] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  }
  const result = new Date(instant);
  // An instant before the year 0 (0000-01-01T00:30 in Berlin, or +01:00) has no four-digit form:
  // answered back it would not be a date-time this API takes.
  if (Number.isNaN(result.getTime()) || result.getUTCFullYear() < 0 || result.getUTCFullYear() > 9999) return undefined;
  if (leapSecond && (result.getUTCHours() !== 23 || result.getUTCMinutes() !== 59)) return undefined;
  return result.toISOString();
}

function daysIn(year: number, month: number): number {
  return new Date(utcTime(year, month, 0)).getUTCDate();
}
