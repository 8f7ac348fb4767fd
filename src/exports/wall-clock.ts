/**
 * A spreadsheet date cell holds a wall-clock time with no zone. To show an instant as it
 * read on the clocks of an IANA time zone, the cell gets the zone's wall time encoded as if
 * it were UTC (exceljs turns a Date into a serial number through its UTC fields).
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  return format;
}

/** Whether Intl knows the zone (IANA names such as `Europe/Berlin`; Windows names are not). */
export function isTimeZone(name: string): boolean {
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

/** The zone's UTC offset in ms at `instant` (wall time minus UTC). */
export function offsetAt(instant: Date, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(instant)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - (instant.getTime() - instant.getUTCMilliseconds());
}

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
    const offsetMinutes = Math.round((wall.getTime() - instant.getTime()) / 60_000);
    const sign = offsetMinutes < 0 ? '-' : '+';
    const abs = Math.abs(offsetMinutes);
    const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
    return `${wall.toISOString().slice(0, 23)}${offset}`;
  };
}
