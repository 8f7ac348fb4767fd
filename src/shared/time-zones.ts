import { findIana } from 'windows-iana';

const known = new Map<string, string | undefined>();
let canonical: Set<string> | undefined;
const canonicalZones = (): Set<string> => (canonical ??= new Set(Intl.supportedValuesOf('timeZone')));

/** Whether Intl knows the zone: its canonical names at once, aliases (`US/Pacific`) by trying. */
function isIntlZone(name: string): boolean {
  if (canonicalZones().has(name)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * The IANA name of a time zone given by its IANA name (`Europe/Berlin`) or its Windows name
 * (`W. Europe Standard Time`, mapped with CLDR's windowsZones table: the zone's default region);
 * undefined when neither (docs/identifiers.md, "Time zones").
 */
export function ianaZone(name: string): string | undefined {
  // timeZoneId is any string (spec): a text longer than any zone name is none, and is not kept as a cache key.
  if (name.length > 64) return undefined;
  if (known.has(name)) return known.get(name);
  const found = [name, ...findIana(name)].find(isIntlZone);
  const zone = found && currentSpelling(found);
  if (known.size < 10_000) known.set(name, zone);
  return zone;
}

/**
 * CLDR (and so windows-iana and ICU's canonical ids) keeps the old spellings of these zones; the
 * IANA database renamed them and keeps the old names as links to the new (file `backward`). The
 * same zone either way; the current name is the one people read (docs/identifiers.md).
 */
const renamed: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};

/** The zone's current IANA name when Intl knows it (an older ICU may not: then the old name). */
function currentSpelling(zone: string): string {
  const current = renamed[zone];
  return current !== undefined && isIntlZone(current) ? current : zone;
}

export interface ZoneChoice {
  name: string;
  /** Why the zone was chosen, for the summary sheet. */
  source: string;
}

/**
 * The zone an event's times are read and shown on, from the stored names: the event's
 * `timeZoneId`, else the account's, else UTC; each an IANA or Windows name, other text skipped.
 */
export function chooseZone(eventZoneId: string | null | undefined, accountZoneId: string | null | undefined): ZoneChoice {
  const eventZone = eventZoneId ? ianaZone(eventZoneId) : undefined;
  if (eventZone) return { name: eventZone, source: 'the event' };
  const skipped = eventZoneId ? ` (the event's "${eventZoneId}" is not a known time zone)` : '';
  const accountZone = accountZoneId ? ianaZone(accountZoneId) : undefined;
  if (accountZone) return { name: accountZone, source: `the account${skipped}` };
  return { name: 'UTC', source: `default${skipped}` };
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      // The era tells year 1 BC (ISO year 0) and earlier from the years AD they are written as.
      era: 'short',
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
  let bc = false;
  for (const part of formatter(timeZone).formatToParts(instant)) {
    if (part.type === 'era') bc = part.value === 'BC';
    else if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  // Not Date.UTC: it reads years 0-99 as 1900-1999 (.NET's DateTime.MinValue is year 1).
  const wall = utcTime(bc ? 1 - parts.year! : parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - (instant.getTime() - instant.getUTCMilliseconds());
}

/** Date.UTC for every year: years 0-99 as written, not as 1900-1999. */
export function utcTime(year: number, monthIndex: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}


/**
 * The instant at which the clocks of `timeZone` show `wall` (a wall time written as if UTC, in
 * ms). A wall time that occurs twice (clocks set back) is the first; one skipped by clocks set
 * forward is read with the offset before the change (so 02:30 on a spring-forward night in
 * Berlin is 03:30 summer time).
 */
export function wallTimeToInstant(wall: number, timeZone: string, reading: WallReading = 'first'): number {
  const day = 86_400_000;
  const before = wall - offsetAt(new Date(wall - day), timeZone);
  const after = wall - offsetAt(new Date(wall + day), timeZone);
  const shows = (t: number) => t + offsetAt(new Date(t), timeZone) === wall;
  const valid = [before, after].filter(shows).sort((a, b) => a - b);
  if (reading === 'first') return valid[0] ?? before;
  if (valid.length > 0) return reading === 'until' ? valid[valid.length - 1]! : valid[0]!;
  return before === after ? before : clocksJump(Math.min(before, after), Math.max(before, after), timeZone);
}

/**
 * How a wall time that occurs twice or never is read. `first`: the first occurrence, a skipped
 * one with the offset before the change (docs/identifiers.md). For the bounds of a window judged
 * on the clocks (a guest's validFrom and validTo), the window holds every instant at which the
 * clocks show a time inside it: `from` is the first occurrence, `until` the last, and a skipped
 * time is the moment the clocks jump over it.
 */
export type WallReading = 'first' | 'from' | 'until';

/** The instant in (lo, hi] at which the zone's offset changes (clocks set forward), to the second. */
function clocksJump(lo: number, hi: number, timeZone: string): number {
  const start = offsetAt(new Date(lo), timeZone);
  let low = Math.floor(lo / 1000);
  let high = Math.ceil(hi / 1000);
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (offsetAt(new Date(mid * 1000), timeZone) === start) low = mid;
    else high = mid;
  }
  return high * 1000;
}
