/**
 * The arrivals curve of one event (GET /checkin/v1/api/event/{id}/timeline; docs/analytics.md):
 * the `timeline_minutes` read model grouped into buckets of the event's local clock.
 */
import { DomainError } from '../domain/decider.js';
import { wallClock } from '../exports/wall-clock.js';
import { TIMELINE_COLLECTION, type DoorCounts, type TimelineMinuteDoc } from '../projections/timeline.js';
import { fieldName } from '../projections/guests.js';
import { getEvent } from './events.js';
import type { SerializedJson } from '../shared/serialized-json.js';
import { cachedTimeline } from './timeline-cache.js';
import { timeZoneOf } from './export.js';
import type { Services } from './services.js';

export type TimelineSplit = 'gate' | 'device';


export interface TimelineQuery {
  /** Bucket size in minutes. */
  bucket: number;
  by?: TimelineSplit;
  /** Window of buckets to return (ISO instants); default: first to last activity. */
  from?: string;
  to?: string;
}

export interface Counts {
  admissions: number;
  admitted: number;
  exits: number;
  rejected: Record<string, number>;
  rejectedTotal: number;
}

export interface TimelineBucket extends Counts {
  /** First instant of the bucket (UTC). */
  start: string;
  /** First instant after it (UTC). */
  end: string;
  /** The bucket's start on the event's clocks, `YYYY-MM-DDTHH:mm`. */
  localStart: string;
  annulled: number;
  /** People whose admission a create imported (no scan), placed at their `admitted`. */
  importedAdmitted: number;
  /** The same people placed at their imported `discharged`, when the import says they left. */
  importedExits: number;
  /** People inside at the bucket's end: everyone admitted so far (imported admissions too) minus everyone who left. */
  insideNow: number;
  /** Present when `by` was asked: the counts per gate (or device) name. */
  groups?: Record<string, Counts>;
}

export interface Timeline {
  eventId: string;
  timeZone: string;
  bucketMinutes: number;
  by?: TimelineSplit;
  /** The whole event, whatever the window. */
  totals: Counts & { annulled: number; importedAdmitted: number; importedExits: number; insideNow: number };
  /** Present (true) when an open end of the window was pulled in to hold at most MAX_BUCKETS buckets. */
  clipped?: true;
  buckets: TimelineBucket[];
}

/** More buckets than this is a request for a larger bucket. */
export const MAX_BUCKETS = 10_000;

const emptyCounts = (): Counts => ({ admissions: 0, admitted: 0, exits: 0, rejected: {}, rejectedTotal: 0 });

function addCounts(target: Counts, source: DoorCounts | undefined): void {
  if (!source) return;
  target.admissions += source.admissions ?? 0;
  target.admitted += source.admitted ?? 0;
  target.exits += source.exits ?? 0;
  const rejected = source.rejected;
  if (!rejected) return;
  // for...in: no array per call (this runs once per minute and group).
  for (const reason in rejected) {
    const count = rejected[reason]!;
    target.rejected[reason] = (target.rejected[reason] ?? 0) + count;
    target.rejectedTotal += count;
  }
}

interface Accumulated {
  counts: Counts;
  annulled: number;
  importedAdmitted: number;
  importedExits: number;
  groups: Map<string, Counts>;
}

/** The change a bucket (or the whole event) makes to the people inside. */
const insideChange = (counts: Counts, acc: { importedAdmitted: number; importedExits: number }): number =>
  counts.admitted + acc.importedAdmitted - counts.exits - acc.importedExits;

export async function eventTimeline(services: Services, clientId: string, eventId: string, query: TimelineQuery): Promise<Timeline> {
  const event = await getEvent(services, clientId, eventId);
  const zone = await timeZoneOf(services, clientId, event);
  return assembleTimeline(services, clientId, event.id, zone.name, query);
}

/**
 * The answer as JSON bytes, for the route: kept per query and handed out again until the
 * event's timeline moves on (src/commands/timeline-cache.ts), so a dashboard polling an
 * unchanged event costs a read of one small document.
 */
export async function eventTimelineJson(services: Services, clientId: string, eventId: string, query: TimelineQuery): Promise<SerializedJson> {
  const event = await getEvent(services, clientId, eventId);
  const zone = await timeZoneOf(services, clientId, event);
  const key = [clientId, event.id, zone.name, query.bucket, query.by ?? '', query.from ?? '', query.to ?? ''].join('\u0000');
  return cachedTimeline(services.readStore, clientId, event.id, key, () => assembleTimeline(services, clientId, event.id, zone.name, query));
}

/** The event's minute documents of one split, in minute order. */
async function readMinutes(services: Services, clientId: string, eventId: string, split: 'total' | TimelineSplit): Promise<TimelineMinuteDoc[]> {
  const minutes = services.readStore.collection<TimelineMinuteDoc>(TIMELINE_COLLECTION);
  const docs: TimelineMinuteDoc[] = [];
  // Read-only: the documents are summed, never changed or kept, so the store need not copy each one.
  for await (const doc of minutes.stream({ clientId, eventId, split }, { sort: { minute: 1 }, batchSize: 5000, readOnly: true })) docs.push(doc);
  return docs;
}

/** Names in the order the answer lists them (the default collation, as `localeCompare`), decoded once each. */
class GroupNames {
  private readonly decoded = new Map<string, string>();
  private rank?: Map<string, number>;

  decode(key: string): string {
    let name = this.decoded.get(key);
    if (name === undefined) this.decoded.set(key, (name = fieldName(key)));
    return name;
  }

  /** A bucket's groups as an object whose keys follow the collation. */
  ordered(groups: Map<string, Counts>): Record<string, Counts> {
    if (!this.rank) {
      const names = [...new Set(this.decoded.values())].sort(new Intl.Collator().compare);
      this.rank = new Map(names.map((name, index) => [name, index]));
    }
    const rank = this.rank;
    // A group whose only scan was undone sums to nothing: it is left out, as if never scanned.
    const entries = [...groups].filter(([, counts]) => counts.admissions !== 0 || counts.admitted !== 0 || counts.exits !== 0 || counts.rejectedTotal !== 0);
    if (entries.length > 1) entries.sort(([a], [b]) => rank.get(a)! - rank.get(b)!);
    return Object.fromEntries(entries);
  }
}

async function assembleTimeline(services: Services, clientId: string, eventId: string, timeZone: string, query: TimelineQuery): Promise<Timeline> {
  const size = query.bucket;
  const totalsDocs = await readMinutes(services, clientId, eventId, 'total');
  const splitDocs = query.by ? await readMinutes(services, clientId, eventId, query.by) : [];

  const from = query.from ? Math.floor(Date.parse(query.from) / 60_000) : undefined;
  const to = query.to ? Math.ceil(Date.parse(query.to) / 60_000) - 1 : undefined;
  const clock = localClock(timeZone, Math.min(from ?? Infinity, totalsDocs[0]?.minute ?? Infinity), Math.max(to ?? -Infinity, totalsDocs.at(-1)?.minute ?? -Infinity));
  const bucketOf = (minute: number) => Math.floor(clock.wallMinute(minute) / size) * size;

  const byBucket = new Map<number, Accumulated>();
  const accumulated = (minute: number) => {
    const key = bucketOf(minute);
    let acc = byBucket.get(key);
    if (!acc) byBucket.set(key, (acc = { counts: emptyCounts(), annulled: 0, importedAdmitted: 0, importedExits: 0, groups: new Map() }));
    return acc;
  };
  const totals = { ...emptyCounts(), annulled: 0, importedAdmitted: 0, importedExits: 0, insideNow: 0 };
  for (const doc of totalsDocs) {
    const acc = accumulated(doc.minute);
    addCounts(acc.counts, doc);
    addCounts(totals, doc);
    acc.annulled += doc.annulled ?? 0;
    totals.annulled += doc.annulled ?? 0;
    acc.importedAdmitted += doc.importedAdmitted ?? 0;
    totals.importedAdmitted += doc.importedAdmitted ?? 0;
    acc.importedExits += doc.importedExits ?? 0;
    totals.importedExits += doc.importedExits ?? 0;
  }
  const names = new GroupNames();
  for (const doc of splitDocs) {
    const acc = accumulated(doc.minute);
    const groups = doc.groups ?? {};
    for (const key in groups) {
      const counts = groups[key]!;
      const group = names.decode(key);
      let target = acc.groups.get(group);
      if (!target) acc.groups.set(group, (target = emptyCounts()));
      addCounts(target, counts);
    }
  }
  totals.insideNow = insideChange(totals, totals);

  const keys = [...byBucket.keys()].sort((a, b) => a - b);
  let first = from !== undefined ? bucketOf(from) : keys[0];
  let last = to !== undefined ? bucketOf(to) : keys[keys.length - 1];
  const buckets: TimelineBucket[] = [];
  let clipped = false;
  if (first !== undefined && last !== undefined && last >= first) {
    // An end the caller left open never makes the answer too long: it is pulled in so the window
    // holds MAX_BUCKETS buckets (the newest ones when both ends are open). Only a window the
    // caller spelled out in full is refused.
    const span = (MAX_BUCKETS - 1) * size;
    if (last - first > span && (from === undefined || to === undefined)) {
      clipped = true;
      if (from === undefined) first = last - span;
      else last = first + span;
    }
    const count = (last - first) / size + 1;
    if (count > MAX_BUCKETS) {
      throw new DomainError('validation_error', `the window holds ${count} buckets of ${size} min; at most ${MAX_BUCKETS}: ask for a larger bucket or a shorter window`, {
        errors: [{ path: 'bucket', message: `at most ${MAX_BUCKETS} buckets per answer` }],
      });
    }
    // People inside before the window opens.
    let inside = 0;
    for (const key of keys) {
      if (key >= first) break;
      const acc = byBucket.get(key)!;
      inside += insideChange(acc.counts, acc);
    }
    for (let key = first; key <= last; key += size) {
      const acc = byBucket.get(key);
      const counts = acc?.counts ?? emptyCounts();
      const imported = { importedAdmitted: acc?.importedAdmitted ?? 0, importedExits: acc?.importedExits ?? 0 };
      inside += insideChange(counts, imported);
      buckets.push({
        start: new Date(clock.utcMinute(key) * 60_000).toISOString(),
        end: new Date(clock.utcMinute(key + size) * 60_000).toISOString(),
        localStart: new Date(key * 60_000).toISOString().slice(0, 16),
        ...counts,
        annulled: acc?.annulled ?? 0,
        ...imported,
        insideNow: inside,
        ...(query.by ? { groups: acc ? names.ordered(acc.groups) : {} } : {}),
      });
    }
  }
  return { eventId, timeZone, bucketMinutes: size, ...(query.by ? { by: query.by } : {}), ...(clipped ? { clipped } : {}), totals, buckets };
}

/** A span no zone changes its offset twice in (clock changes are months apart). */
const STEADY_SPAN_MINUTES = 14 * 24 * 60;
/** How far a bucket (at most 1440 min, and a wall time up to a day off UTC) reaches past the minutes it holds. */
const STEADY_MARGIN_MINUTES = 2 * 1440;

/**
 * Converts between UTC minutes and the zone's wall-clock minutes (minutes since the epoch as
 * if the local time were UTC). When the offset is the same at both ends of a short span (no
 * clock change in it, the usual case) it is one subtraction; otherwise each minute asks Intl.
 * A wall time the clocks show twice maps to its first instant; one they skip, to the change.
 */
export function localClock(timeZone: string, firstMinute: number, lastMinute: number) {
  const toWall = wallClock(timeZone);
  const offsetAt = (minute: number) => (toWall(new Date(minute * 60_000)).getTime() - minute * 60_000) / 60_000;
  // The buckets reach past the activity: a day bucket starts up to a day before its first scan
  // and ends up to a day after its last (a 25-hour day in Sydney starts at 00:00 +11 though every
  // scan came after 03:00 became 02:00 +10). The offset is steady only if it is so over them too.
  const [low, high] = [firstMinute - STEADY_MARGIN_MINUTES, lastMinute + STEADY_MARGIN_MINUTES];
  const steady =
    Number.isFinite(firstMinute) && high - low <= STEADY_SPAN_MINUTES && offsetAt(low) === offsetAt(high) ? offsetAt(low) : undefined;
  if (steady !== undefined) return { wallMinute: (minute: number) => minute + steady, utcMinute: (wall: number) => wall - steady };
  const wallMinute = (minute: number) => minute + offsetAt(minute);
  return {
    wallMinute,
    utcMinute: (wall: number) => {
      const before = wall - offsetAt(wall - 1440);
      const after = wall - offsetAt(wall + 1440);
      const shown = [before, after].filter((utc) => wallMinute(utc) === wall);
      if (shown.length > 0) return Math.min(...shown);
      // Skipped: the change is the first instant after `after` whose wall time is past `wall`
      // (a few Intl lookups, only for the buckets of a skipped hour).
      let low = after;
      let high = before;
      while (high - low > 1) {
        const middle = low + Math.floor((high - low) / 2);
        if (wallMinute(middle) > wall) high = middle;
        else low = middle;
      }
      return high;
    },
  };
}
