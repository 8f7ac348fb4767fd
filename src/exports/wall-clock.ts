/**
 * A spreadsheet date cell holds a wall-clock time with no zone. To show an instant as it
 * read on the clocks of an IANA time zone, the cell gets the zone's wall time encoded as if
 * it were UTC (the xlsx writer turns a Date into a serial number through its UTC fields).
 */
import { isTimeZone, offsetAt } from '../shared/time-zones.js';

export { isTimeZone };

/**
 * Offsets are cached per UTC minute: a zone's offset changes at most at whole minutes since
 * the 1900s (the older local-mean-time changes may be off by under a minute near the change).
 */
export function wallClock(timeZone: string): (instant: Date) => Date {
  if (timeZone === 'UTC') return (instant) => instant;
  const cache = new Map<number, number>();
  return (instant) => {
    const minute = Math.floor(instant.getTime() / 60_000);
    let offset = cache.get(minute);
    if (offset === undefined) {
      offset = offsetAt(instant, timeZone);
      if (cache.size > 100_000) cache.clear();
      cache.set(minute, offset);
    }
    return new Date(instant.getTime() + offset);
  };
}

/**
 * ISO 8601 in the zone's wall time with its offset (`2026-11-21T11:00:00.000+01:00`): the CSV
 * shows the same clock time as the Excel cells, and the offset keeps the instant exact.
 */
export function isoInZone(timeZone: string): (instant: Date) => string {
  const toWall = wallClock(timeZone);
  return (instant) => {
    const wall = toWall(instant);
    const offsetMs = wall.getTime() - instant.getTime();
    // ISO 8601 offsets are whole minutes: a local mean time of seconds (Kolkata's +05:21:10
    // until 1941, Amsterdam's +00:19:32 until 1937) written as +05:21 would name another instant.
    if (offsetMs % 60_000 !== 0) return instant.toISOString();
    const offsetMinutes = offsetMs / 60_000;
    const sign = offsetMinutes < 0 ? '-' : '+';
    const abs = Math.abs(offsetMinutes);
    const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
    const text = wall.toISOString();
    // A wall-clock year outside 0000-9999 (9999-12-31T23:59:59Z, a common "no end", is 10000 east
    // of UTC) has no four-digit form: the instant as the API answers it, in UTC.
    return text.length === 24 ? `${text.slice(0, 23)}${offset}` : instant.toISOString();
  };
}

/**
 * `isoInZone` for the stored ISO text of an instant, remembering the texts it has seen: many
 * guests share a `validFrom` or `validTo`, and parsing and formatting a date is most of a CSV
 * row's work otherwise. Undefined for a text that is not a time.
 */
export function isoTextInZone(timeZone: string): (text: string) => string | undefined {
  const inZone = isoInZone(timeZone);
  const seen = new Map<string, string | undefined>();
  return (text) => {
    let iso = seen.get(text);
    if (iso === undefined && !seen.has(text)) {
      const instant = new Date(text);
      iso = Number.isNaN(instant.getTime()) ? undefined : inZone(instant);
      if (seen.size >= 10_000) seen.clear();
      seen.set(text, iso);
    }
    return iso;
  };
}
