import type { EventStore, StoredEvent } from '../adapters/eventstore/port.js';
import { decodeCursor, encodeCursor, InvalidCursorError, type SortKey } from '../adapters/readstore/cursor.js';
import { DomainError } from '../domain/decider.js';
import { guestDecider, type GuestEvent } from '../domain/guest.js';
import { invitationStream } from '../domain/invitation.js';
import { guestIdOf, guestStreamOf, shownGuestId } from '../projections/guests.js';
import { findGuestByIdOrCustomId } from './guest-lookup.js';
import type { Services } from './services.js';
import { withoutRemovedScanners } from './removed-scanners.js';

/**
 * Audit: the history of one guest (docs/guests.md, "History for auditors"), a page at a time.
 *
 * The history is the guest's stream and the streams of its invitation emails, merged in the
 * store's global order. A page is a k-way merge of those streams read forwards from where the
 * previous page stopped (`fromRevision`, in chunks), so a page reads about what it returns, not
 * the whole history; only the guest's own stream (small: its changes and scans) is read whole,
 * since it names the invitation streams (and, with `asOf`, gives the state).
 *
 * Consistency: a page is read as of the store's head when the request began: events appended
 * meanwhile (a larger global position) are left for the next page, which reads from the
 * cursor's position on. Positions only grow, so a walk never skips or repeats an event, and what
 * was appended during the walk is on a later page.
 */

export const HISTORY_DEFAULT_LIMIT = 500;
export const HISTORY_MAX_LIMIT = 1000;
/**
 * With `asOf`, events after the instant are looked at and left out; a page looks at this many
 * events at most and then ends (fewer events than `limit`, with a `nextCursor`) so that one
 * request's work stays bounded.
 */
export const HISTORY_SCAN_BUDGET = 5000;
/** The first read of each stream takes this many events; each further read of it twice as many (up to the page's limit). */
const FIRST_CHUNK = 64;
/** The route's cursor schema takes at most 2000 characters (src/http/schemas/common.ts). */
const MAX_CURSOR_LENGTH = 2000;

/** Global order: position, then stream (the guest's first, then its invitations as requested), then revision. */
type Key = readonly [position: number, stream: number, revision: number];
const compareKeys = (a: Key, b: Key): number => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
const BEFORE_ALL: Key = [-1, -1, -1];

/**
 * The cursor, in the read store's opaque encoding (src/adapters/readstore/cursor.ts): whose
 * history and which `asOf` it was made for, the last event looked at (its key), and, per
 * stream, the revision to read on from (`next`; a hint that saves searching each stream).
 */
const cursorKeys: SortKey[] = [['guestId', 1], ['asOf', 1], ['position', 1], ['stream', 1], ['revision', 1], ['next', 1]];

interface HistoryCursor {
  last: Key;
  next: (number | null)[];
}

const isInt = (value: unknown, min: number): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= min;

function readCursor(cursor: string, guestId: string, asOf: string | undefined): HistoryCursor {
  const [forGuest, forAsOf, position, stream, revision, next] = decodeCursor(cursor, cursorKeys);
  if (
    forGuest !== guestId ||
    forAsOf !== (asOf ?? null) ||
    !isInt(position, -1) ||
    !isInt(stream, -1) ||
    !isInt(revision, -1) ||
    !Array.isArray(next) ||
    !next.every((r) => r === null || isInt(r, 0))
  ) {
    throw new InvalidCursorError();
  }
  return { last: [position, stream, revision], next: next as (number | null)[] };
}

function writeCursor(guestId: string, asOf: string | undefined, last: Key, next: (number | null)[]): string {
  const values = (hints: (number | null)[]) => [guestId, asOf ?? null, ...last, hints];
  const cursor = encodeCursor(values(next), cursorKeys);
  // A guest with hundreds of invitation emails: without the hints, the next page searches each stream.
  return cursor.length <= MAX_CURSOR_LENGTH ? cursor : encodeCursor(values([]), cursorKeys);
}

/** One stream of the merge: read forwards in chunks from `from`, the next revision not yet looked at. */
interface Source {
  stream: string;
  index: number;
  from: number;
  buffer: StoredEvent[];
  at: number;
  exhausted: boolean;
  chunk: number;
}

const keyOf = (event: StoredEvent, index: number): Key => [event.position, index, event.revision];

/**
 * The revision to read `stream` on from so that every event read is after `last`: a binary
 * search over the stream (one event per probe, without opening personal data). Revisions may
 * start above 0 (a stream with a max age), so probes read "the first event at or after".
 */
async function startOf(store: EventStore, stream: string, index: number, last: Key): Promise<number> {
  if (last[0] < 0) return 0;
  const after = (event: StoredEvent) => compareKeys(keyOf(event, index), last) > 0;
  const probe = async (revision: number) => (await store.readStream(stream, { fromRevision: revision, maxCount: 1, personalData: false }))[0];
  const first = await probe(0);
  if (!first || after(first)) return 0;
  const [end] = await store.readStream(stream, { direction: 'backwards', maxCount: 1, personalData: false });
  if (!end || !after(end)) return (end?.revision ?? first.revision) + 1;
  // Invariant: the event at `low` is not after `last`; every event from `high` on is.
  let low = first.revision;
  let high = end.revision;
  while (high - low > 1) {
    const middle = low + Math.floor((high - low) / 2);
    const event = (await probe(middle))!;
    if (after(event)) high = middle;
    else low = event.revision;
  }
  return high;
}

export interface HistoryQuery {
  asOf?: string;
  eventId?: string;
  limit?: number;
  cursor?: string;
}

/** Audit: one page of a guest's history; with `asOf`, the events up to then and the guest as it was then. */
export async function guestHistory(services: Services, clientId: string, idOrCustomId: string, query: HistoryQuery) {
  const { asOf } = query;
  const limit = query.limit ?? HISTORY_DEFAULT_LIMIT;
  const store = services.eventStore;
  const doc = await findGuestByIdOrCustomId(services, clientId, idOrCustomId, query.eventId);
  const guestId = guestIdOf(doc);
  const start = query.cursor ? readCursor(query.cursor, guestId, asOf) : { last: BEFORE_ALL, next: [] };
  // The snapshot: whatever is appended from now on (a larger position) waits for the next page.
  // Read first, so that every event up to it is seen by the reads below.
  const head = await store.headPosition();
  // The guest's stream, whole: it names the invitation streams. Its personal data is opened only
  // when the state as of `asOf` needs it; otherwise the page's part is read again, opened, below.
  const guestEvents = await store.readStream(guestStreamOf(doc), { personalData: asOf !== undefined });
  if (guestEvents.length === 0 || guestEvents[0]!.metadata.tenantId !== clientId) throw new DomainError('not_found', 'guest not found');
  const before = (e: StoredEvent) => !asOf || e.metadata.occurredAt <= asOf;
  // The guest as the service knew it at `asOf` is a prefix of its stream: the events up to the
  // first one stamped after `asOf`. An event recorded after that one but stamped earlier (an
  // instance whose clock is behind) was decided on the state the later-stamped one made, so it
  // is not folded (or shown) without it.
  const cutoff = asOf === undefined ? Infinity : (guestEvents.find((e) => !before(e))?.revision ?? Infinity);
  const known = (e: StoredEvent) => e.revision < cutoff;

  // Stream 0 is the guest's; stream i > 0 the i-th invitation it requested (in the order
  // requested, which never changes: the guest's stream only grows). With asOf, only the
  // invitations requested by then.
  const invitations: { id: string; included: boolean }[] = [];
  const seen = new Set<string>();
  for (const e of guestEvents) {
    if (e.type !== 'InvitationRequested') continue;
    const id = (e.data as { attendeeInvitationId: string }).attendeeInvitationId;
    if (seen.has(id)) continue;
    seen.add(id);
    invitations.push({ id, included: known(e) });
  }
  const sources: Source[] = [];
  const guestSource: Source = { stream: guestStreamOf(doc), index: 0, from: 0, buffer: [], at: 0, exhausted: false, chunk: Math.min(FIRST_CHUNK, limit + 1) };
  const guestHint = start.next[0];
  guestSource.from =
    typeof guestHint === 'number' ? guestHint : (guestEvents.find((e) => compareKeys(keyOf(e, 0), start.last) > 0)?.revision ?? guestEvents[guestEvents.length - 1]!.revision + 1);
  if (asOf !== undefined) {
    // Already read with its personal data: no second read.
    guestSource.buffer = guestEvents.filter((e) => e.revision >= guestSource.from);
    guestSource.exhausted = true;
  }
  sources.push(guestSource);
  const invitationSources = await Promise.all(
    invitations.flatMap((invitation, i) => {
      if (!invitation.included) return [];
      const index = i + 1;
      const stream = invitationStream(invitation.id);
      const hint = start.next[index];
      return [
        (async (): Promise<Source> => {
          const from = typeof hint === 'number' ? hint : await startOf(store, stream, index, start.last);
          return { stream, index, from, buffer: [], at: 0, exhausted: false, chunk: Math.min(FIRST_CHUNK, limit + 1) };
        })(),
      ];
    }),
  );
  sources.push(...invitationSources);

  const peek = async (source: Source): Promise<StoredEvent | undefined> => {
    if (source.at >= source.buffer.length && !source.exhausted) {
      const chunk = await store.readStream(source.stream, { fromRevision: source.from, maxCount: source.chunk });
      source.buffer = chunk;
      source.at = 0;
      source.exhausted = chunk.length < source.chunk;
      source.chunk = Math.min(source.chunk * 2, limit + 1);
    }
    return source.buffer[source.at];
  };

  const page: StoredEvent[] = [];
  let last = start.last;
  let looked = 0;
  let more = false;
  for (;;) {
    let best: Source | undefined;
    let bestKey: Key | undefined;
    for (const source of sources) {
      const event = await peek(source);
      if (!event) continue;
      const key = keyOf(event, source.index);
      if (key[0] > head) {
        more = true; // appended during this request: the next page's
        continue;
      }
      if (!bestKey || compareKeys(key, bestKey) < 0) {
        best = source;
        bestKey = key;
      }
    }
    if (!best || !bestKey) break;
    const event = best.buffer[best.at]!;
    best.at += 1;
    best.from = event.revision + 1;
    if (compareKeys(bestKey, last) <= 0) continue; // from a hint below the cursor: returned already
    const wanted = best.index === 0 ? known(event) : before(event);
    if ((wanted && page.length >= limit) || looked >= HISTORY_SCAN_BUDGET) {
      // Not taken: the next page starts with it.
      best.at -= 1;
      best.from = event.revision;
      more = true;
      break;
    }
    looked += 1;
    last = bestKey;
    if (wanted) page.push(event);
  }

  // A removed team member's user name is not answered (docs/personal-data.md, "Team members and account users").
  const history = await withoutRemovedScanners(services, clientId, page.map((e) => ({
    type: e.type,
    stream: e.streamName,
    at: e.metadata.occurredAt,
    recordedAt: e.recordedAt,
    revision: e.revision,
    actor: e.metadata.actor,
    correlationId: e.metadata.correlationId,
    ...(e.metadata.requestId ? { requestId: e.metadata.requestId } : {}),
    data: e.data,
  })));
  let nextCursor: string | undefined;
  if (more) {
    const next: (number | null)[] = Array.from({ length: invitations.length + 1 }, () => null);
    for (const source of sources) next[source.index] = source.from;
    nextCursor = writeCursor(guestId, asOf, last, next);
  }
  const paging = nextCursor ? { nextCursor } : {};
  // The id as the caller first sent it (docs/identifiers.md); the events' own data keep the lowercase key.
  const shown = shownGuestId(doc);
  if (!asOf) return { guestId: shown, events: history, ...paging };
  return { guestId: shown, asOf, events: history, state: stateAsOf(shown, guestEvents, known), ...paging };
}

/** The guest as it was: its own events up to `asOf`, folded by the live guest's decider. */
function stateAsOf(guestId: string, events: StoredEvent[], before: (e: StoredEvent) => boolean) {
  const erasedLater = events.some((e) => e.type === 'GuestErased');
  let state = guestDecider.initialState();
  for (const e of events.filter(before)) state = guestDecider.evolve(state, e as unknown as GuestEvent);
  return state.exists
    ? {
        id: guestId,
        eventId: state.eventId,
        ...state.details,
        ...(state.tags.length > 0 ? { tags: state.tags.join(',') } : {}),
        admittedPlusOnes: state.admittedPlusOnes,
        ...(state.admitted ? { admitted: state.admitted } : {}),
        ...(state.discharged ? { discharged: state.discharged } : {}),
        ...(state.blockedDate ? { blockedDate: state.blockedDate, blockedReason: state.blockedReason } : {}),
        inside: state.inside,
        // Erased by then: marked as GET /guest/{id} marks it. Erased later: the data it had then
        // is gone all the same (its key is deleted), so say so rather than show a guest without names.
        ...(state.erased ? { erased: true, erasedAt: state.erased.at } : {}),
        ...(erasedLater ? { personalDataErased: true } : {}),
      }
    : null;
}

/** The whole history, every page (the personal-data document holds all of it). */
export async function wholeGuestHistory(services: Services, clientId: string, guestId: string, eventId: string) {
  const events: Awaited<ReturnType<typeof guestHistory>>['events'] = [];
  let cursor: string | undefined;
  do {
    const page = await guestHistory(services, clientId, guestId, { eventId, limit: HISTORY_MAX_LIMIT, ...(cursor ? { cursor } : {}) });
    events.push(...page.events);
    cursor = page.nextCursor;
  } while (cursor);
  return events;
}
