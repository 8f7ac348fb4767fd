import type { Filter } from '../adapters/readstore/port.js';
import { INT32_MAX } from '../domain/guest.js';
import { eventKey, getEvent } from './events.js';
import { timeZoneOf } from './export.js';
import { localClock } from './timeline.js';
import { guests, guestViewJson, toGuestView, type GuestView } from './guests.js';
import type { Services } from './services.js';
import { fieldName, type GuestDoc, type ScanDoc } from '../projections/guests.js';
import { teamMemberIdOf, type AccountDoc, type TeamMemberDoc } from '../projections/accounts.js';
import { caselessKey } from '../shared/text-key.js';
import { compareStrings } from '../shared/text-order.js';
import { isRemoved, removedScannerName, withoutRemovedScanners } from './removed-scanners.js';

/** A literal text as a case-insensitive regex: the caller's text is never a pattern. */
const literal = (text: string) => ({ $regex: text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), $options: 'i' });

/**
 * Caller text against a stored key (`...Lower`, caselessKey): equivalent text matches in either
 * Unicode form, composed or decomposed (docs/guests.md, "Equivalent text").
 */
const containsText = (text: string) => literal(caselessKey(text));

export interface GuestListQuery {
  limit: number;
  cursor?: string;
  tag?: string;
  state?: 'admitted' | 'not_admitted' | 'inside' | 'blocked' | 'not_blocked' | 'discharged';
  q?: string;
  changedSince?: string;
}

const stateFilters: Record<NonNullable<GuestListQuery['state']>, Filter> = {
  admitted: { admitted: { $exists: true } },
  not_admitted: { admitted: { $exists: false } },
  inside: { inside: true },
  blocked: { blockedDate: { $exists: true } },
  not_blocked: { blockedDate: { $exists: false } },
  discharged: { discharged: { $exists: true } },
};

/** Guests of an event, filtered; sorted by name, or by change time for offline sync. */
export async function listGuests(services: Services, clientId: string, eventId: string, query: GuestListQuery) {
  await getEvent(services, clientId, eventId);
  const clauses: Filter[] = [{ clientId, eventId }];
  if (query.tag) clauses.push({ tagList: caselessKey(query.tag.trim()) });
  if (query.state) clauses.push(stateFilters[query.state]);
  if (query.q) {
    // Names, email and customId on their keys; a barcode is data as scanned, matched as sent (docs/guests.md, "Equivalent text").
    const text = containsText(query.q.trim());
    const keys = ['firstNameLower', 'lastNameLower', 'otherNamesLower', 'emailLower', 'customIdLower'].map((f) => ({ [f]: text }));
    clauses.push({ $or: [...keys, { barcode: literal(query.q.trim()) }] });
  }
  if (query.changedSince) clauses.push({ updated: { $gt: query.changedSince } });
  const page = await guests(services).find(clauses.length === 1 ? clauses[0]! : { $and: clauses }, {
    sort: query.changedSince ? { updated: 1 } : { lastNameLower: 1, firstNameLower: 1 },
    limit: query.limit,
    ...(query.cursor ? { cursor: query.cursor } : {}),
  });
  return { items: page.items.map(toGuestView), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}

const byName = { lastNameLower: 1, firstNameLower: 1 } as const;

/**
 * Spec: "array of guest objects whose additional info matches" (contains the text, any case and
 * either Unicode form),
 * by last then first name: every match, in batches of documents the route writes out as it
 * reads, each as `json` writes it.
 */
export async function guestsByInfo(
  services: Services,
  clientId: string,
  eventId: string,
  additionalInfo: string,
): Promise<{ batches: AsyncIterable<GuestDoc[]>; json: (doc: GuestDoc) => string }> {
  await getEvent(services, clientId, eventId);
  const filter = { clientId, eventId, additionalInfoLower: containsText(additionalInfo) };
  return { batches: guests(services).batches(filter, { sort: byName, readOnly: true }), json: guestViewJson };
}

/** byinfo one page at a time, when the caller asks for paging (`limit` or `cursor`). */
export async function guestsByInfoPage(
  services: Services,
  clientId: string,
  eventId: string,
  query: { additionalInfo: string; limit: number; cursor?: string },
): Promise<{ items: GuestView[]; nextCursor?: string }> {
  await getEvent(services, clientId, eventId);
  const page = await guests(services).find(
    { clientId, eventId, additionalInfoLower: containsText(query.additionalInfo) },
    { sort: byName, limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) },
  );
  return { items: page.items.map(toGuestView), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}

export async function listScans(
  services: Services,
  clientId: string,
  eventId: string,
  query: { result?: 'admitted' | 'rejected' | 'discharged'; limit: number; cursor?: string },
) {
  await getEvent(services, clientId, eventId);
  const page = await services.readStore.collection<ScanDoc>('scans').find(
    { clientId, eventId, ...(query.result ? { result: query.result } : {}) },
    { sort: { at: -1 }, limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) },
  );
  const items = await withoutRemovedScanners(services, clientId, page.items.map(({ _id, clientId: _c, ...scan }) => ({ scanId: _id, ...scan })));
  return { items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}

interface TeamStatsDoc {
  _id: string;
  eventId: string;
  clientId: string;
  teamMemberId: string;
  username: string;
  checkedIn: number;
  checkedOut: number;
  activity?: Record<string, number>;
}

/**
 * Spec: Team member event statistics, with activity grouped into buckets of `bucketMinutes`.
 * Every team member of the client is listed (zeros when they scanned nothing here), and so is
 * the client itself when it scanned; sorted by username without regard to case.
 */
export async function teamStats(services: Services, clientId: string, eventId: string, bucketMinutes: number) {
  const event = await getEvent(services, clientId, eventId);
  // Buckets follow the event's clock as the timeline's do (docs/analytics.md, "Which clock"), so an
  // hour or a day here is the same span as the timeline's: on UTC's they were not (a day in
  // Berlin from 01:00, an hour in Kolkata from half past).
  const { name: timeZone } = await timeZoneOf(services, clientId, event);
  const docs = new Map<string, TeamStatsDoc>();
  for await (const doc of services.readStore.collection<TeamStatsDoc>('team_stats').stream({ clientId, eventId })) {
    docs.set(doc.teamMemberId, doc);
  }
  // The client's own row (its scans) under its user name now, not the one it had at its last scan here (PUT user renames it).
  const own = docs.get(clientId);
  if (own) {
    const account = await services.readStore.collection<AccountDoc>('accounts').get(clientId, { readOnly: true });
    if (account) docs.set(clientId, { ...own, username: account.userName });
  }
  const current = new Set<string>([clientId]);
  for await (const member of services.readStore.collection<TeamMemberDoc>('team_members').stream({ clientId })) {
    const teamMemberId = teamMemberIdOf(member);
    current.add(teamMemberId);
    const scanned = docs.get(teamMemberId);
    // A team member removed and created anew under its id may have another name: the row shows the current one.
    docs.set(
      teamMemberId,
      scanned
        ? { ...scanned, username: member.userName }
        : { _id: `${eventId}:${teamMemberId}`, eventId, clientId, teamMemberId, username: member.userName, checkedIn: 0, checkedOut: 0 },
    );
  }
  // A removed team member's row stays counted under its id, without its user name (a rebuild writes the name back from the events).
  for (const [id, doc] of docs) if (!current.has(id) && doc.username !== removedScannerName && (await isRemoved(services, clientId, id))) docs.set(id, { ...doc, username: removedScannerName });
  // The spec types these counts int32: a group of int32-max plus ones would overflow a client's int, so a count stops there.
  const int32 = (count: number) => Math.min(count, INT32_MAX);
  // By username without regard to case, as the team member list sorts (userNameLower, by code point as
  // MongoDB does); the exact name breaks ties.
  const order = (doc: TeamStatsDoc) => [caselessKey(doc.username), doc.username] as const;
  const sorted = [...docs.values()].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return compareStrings(x[0], y[0]) || compareStrings(x[1], y[1]);
  });
  const stats: unknown[] = [];
  for (const doc of sorted) {
    const minutes = Object.entries(doc.activity ?? {}).map(([key, count]) => [Number(key.slice(1)), count] as const);
    const clock = localClock(
      timeZone,
      minutes.reduce((low, [m]) => Math.min(low, m), Infinity),
      minutes.reduce((high, [m]) => Math.max(high, m), -Infinity),
    );
    const buckets = new Map<number, number>();
    for (const [minute, count] of minutes) {
      const start = clock.utcMinute(Math.floor(clock.wallMinute(minute) / bucketMinutes) * bucketMinutes);
      buckets.set(start, (buckets.get(start) ?? 0) + count);
    }
    stats.push({
      id: `${doc.eventId}:${doc.teamMemberId}`,
      eventId: doc.eventId,
      teamMemberId: doc.teamMemberId,
      username: doc.username,
      checkedIn: int32(doc.checkedIn),
      checkedOut: int32(doc.checkedOut),
      checkedInActivity: [...buckets.entries()]
        .filter(([, count]) => count !== 0)
        .sort(([a], [b]) => a - b)
        .map(([start, count]) => ({ admitted: new Date(start * 60_000).toISOString(), admittedCount: int32(count) })),
    });
  }
  return stats;
}

interface EventStatsDoc {
  _id: string;
  rejected?: Record<string, number>;
  gates?: Record<string, { admissions: number; people: number }>;
  devices?: Record<string, { admissions: number; people: number }>;
  annulled?: number;
}

/**
 * Gates and devices by name; one whose every admission was annulled is left out, as a recount of
 * the scans would. Two keys of one name (the empty name: `''` in an embedded store written before
 * its key was `%`) add up.
 */
const decodeKeys = (map: Record<string, { admissions: number; people: number }> | undefined) => {
  const byName = new Map<string, { admissions: number; people: number }>();
  for (const [key, counts] of Object.entries(map ?? {})) {
    const name = fieldName(key);
    const sum = byName.get(name);
    byName.set(name, sum ? { admissions: sum.admissions + counts.admissions, people: sum.people + counts.people } : counts);
  }
  return Object.fromEntries([...byName].filter(([, v]) => v.admissions !== 0));
};

/** The organizer's overview of one event. */
export async function eventStats(services: Services, clientId: string, eventId: string) {
  await getEvent(services, clientId, eventId);
  const collection = guests(services);
  let invited = 0;
  let admitted = 0;
  let insideGuests = 0;
  let insidePeople = 0;
  let plusOnesInvited = 0;
  let plusOnesAdmitted = 0;
  let blocked = 0;
  for await (const guest of collection.stream({ clientId, eventId }, { readOnly: true })) {
    invited += 1;
    plusOnesInvited += guest.plusOnes ?? 0;
    if (guest.admitted) admitted += 1;
    if (guest.inside) {
      insideGuests += 1;
      insidePeople += 1 + (guest.admittedPlusOnes ?? 0);
      plusOnesAdmitted += guest.admittedPlusOnes ?? 0;
    }
    if (guest.blockedDate) blocked += 1;
  }
  const counters = await services.readStore.collection<EventStatsDoc>('event_stats').get(eventKey(clientId, eventId));
  return {
    eventId,
    invited,
    admitted,
    insideNow: { guests: insideGuests, people: insidePeople },
    plusOnes: { invited: plusOnesInvited, insideNow: plusOnesAdmitted },
    blocked,
    rejectedScans: counters?.rejected ?? {},
    annulledCheckIns: counters?.annulled ?? 0,
    admissionsByGate: decodeKeys(counters?.gates),
    admissionsByDevice: decodeKeys(counters?.devices),
  };
}
