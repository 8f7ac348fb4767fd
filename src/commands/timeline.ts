/**
 * The arrivals curve of one event (GET /checkin/v1/api/event/{id}/timeline; docs/analytics.md):
 * the `timeline_minutes` read model grouped into buckets of the event's local clock.
 */
import { DomainError } from '../domain/decider.js';
import { wallClock } from '../exports/wall-clock.js';
import { TIMELINE_COLLECTION, type DoorCounts, type TimelineMinuteDoc } from '../projections/timeline.js';
import { getEvent } from './events.js';
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
  /** People inside at the bucket's end: everyone admitted so far minus everyone who left. */
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
  totals: Counts & { annulled: number; insideNow: number };
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
  for (const [reason, count] of Object.entries(source.rejected ?? {})) {
    target.rejected[reason] = (target.rejected[reason] ?? 0) + count;
    target.rejectedTotal += count;
  }
}

interface Accumulated {
  counts: Counts;
  annulled: number;
  groups: Map<string, Counts>;
}

export async function eventTimeline(services: Services, clientId: string, eventId: string, query: TimelineQuery): Promise<Timeline> {
  const event = await getEvent(services, clientId, eventId);
  const zone = await timeZoneOf(services, clientId, event);
  const toWall = wallClock(zone.name);
  const size = query.bucket;
  /** Wall-clock minute (minutes since the epoch, as if the local time were UTC) of a UTC minute. */
  const wallMinute = (minute: number) => Math.floor(toWall(new Date(minute * 60_000)).getTime() / 60_000);
  const bucketOf = (minute: number) => Math.floor(wallMinute(minute) / size) * size;

  const byBucket = new Map<number, Accumulated>();
  const totals = { ...emptyCounts(), annulled: 0, insideNow: 0 };
  const minutes = services.readStore.collection<TimelineMinuteDoc>(TIMELINE_COLLECTION);
  for await (const doc of minutes.stream({ eventId: event.id }, { sort: { minute: 1 }, batchSize: 1000 })) {
    const key = bucketOf(doc.minute);
    let acc = byBucket.get(key);
    if (!acc) byBucket.set(key, (acc = { counts: emptyCounts(), annulled: 0, groups: new Map() }));
    addCounts(acc.counts, doc);
    addCounts(totals, doc);
    acc.annulled += doc.annulled ?? 0;
    totals.annulled += doc.annulled ?? 0;
    if (query.by) {
      for (const [name, counts] of Object.entries((query.by === 'gate' ? doc.gates : doc.devices) ?? {})) {
        const group = decodeURIComponent(name);
        let target = acc.groups.get(group);
        if (!target) acc.groups.set(group, (target = emptyCounts()));
        addCounts(target, counts);
      }
    }
  }
  totals.insideNow = totals.admitted - totals.exits;

  const keys = [...byBucket.keys()].sort((a, b) => a - b);
  const first = query.from ? bucketOf(Math.floor(Date.parse(query.from) / 60_000)) : keys[0];
  const last = query.to ? bucketOf(Math.ceil(Date.parse(query.to) / 60_000) - 1) : keys[keys.length - 1];
  const buckets: TimelineBucket[] = [];
  if (first !== undefined && last !== undefined && last >= first) {
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
      const { counts } = byBucket.get(key)!;
      inside += counts.admitted - counts.exits;
    }
    const toUtc = utcOfWall(zone.name);
    for (let key = first; key <= last; key += size) {
      const acc = byBucket.get(key);
      const counts = acc?.counts ?? emptyCounts();
      inside += counts.admitted - counts.exits;
      buckets.push({
        start: toUtc(key).toISOString(),
        end: toUtc(key + size).toISOString(),
        localStart: new Date(key * 60_000).toISOString().slice(0, 16),
        ...counts,
        annulled: acc?.annulled ?? 0,
        insideNow: inside,
        ...(query.by ? { groups: Object.fromEntries([...(acc?.groups ?? new Map<string, Counts>())].sort(([a], [b]) => a.localeCompare(b))) } : {}),
      });
    }
  }
  return { eventId: event.id, timeZone: zone.name, bucketMinutes: size, ...(query.by ? { by: query.by } : {}), totals, buckets };
}

/**
 * The UTC instant of a local wall-clock minute. Around a clock change the offset is taken at
 * the instant the wall time would have under the offset an hour before (docs/analytics.md).
 */
function utcOfWall(timeZone: string): (wallMinute: number) => Date {
  const toWall = wallClock(timeZone);
  return (wallMinute) => {
    const wall = wallMinute * 60_000;
    const guess = wall - (toWall(new Date(wall)).getTime() - wall);
    const offset = toWall(new Date(guess)).getTime() - guess;
    return new Date(wall - offset);
  };
}
