import { eventDecider, eventStream, legacyEventStream, type EventChanges, type EventDetails } from '../domain/event.js';
import { DomainError } from '../domain/decider.js';
import { exactKey, isUuid, newId } from '../shared/ids.js';
import { chooseZone, ianaZone } from '../shared/time-zones.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import { readModelsBehind, type Services } from './services.js';

export interface EventView extends EventDetails {
  id: string;
  created: string;
  updated: string;
}

export type EventDoc = { _id: string; clientId: string; eventId: string; created: string; updated: string; idAsSent?: true } & EventDetails;

/**
 * The views with `ianaTimeZone`: the zone the service reads and shows each event's times on (its
 * own, else the account's, else UTC), so a client such as the dashboard shows the same clock
 * without resolving Windows names or skipping unknown text itself (docs/identifiers.md).
 */
export async function withIanaTimeZone(services: Services, clientId: string, views: EventView[]): Promise<(EventView & { ianaTimeZone: string })[]> {
  const needsAccount = views.some((view) => !(view.timeZoneId && ianaZone(view.timeZoneId)));
  const account = needsAccount ? await services.readStore.collection<{ _id: string; timeZoneId?: string }>('accounts').get(clientId) : undefined;
  return views.map((view) => ({ ...view, ianaTimeZone: chooseZone(view.timeZoneId, account?.timeZoneId).name }));
}

export function toEventView(doc: EventDoc): EventView {
  const { _id, clientId: _c, eventId, idAsSent: _kept, ...rest } = doc;
  return { id: eventId, ...rest };
}

/** Create an event, or update it when `id` names an existing event of the same client. */
export async function saveEvent(
  services: Services,
  context: CommandContext,
  input: EventChanges & { id?: string },
): Promise<EventView> {
  const { id, ...details } = input;
  const eventId = id === undefined ? newId() : await storedEventId(services, context.tenantId, id);
  const stream = await eventStreamOf(services, context.tenantId, eventId);
  const result = await handleCommand(services.eventStore, eventDecider, stream, {
    type: 'SaveEvent',
    eventId,
    clientId: context.tenantId,
    details,
  }, context);
  await services.readYourWrites(result.position);
  const saved = await findEvent(services, context.tenantId, eventId);
  if (!saved) throw readModelsBehind(`event ${eventId}`);
  return saved;
}

/**
 * The stream of this client's event. An event created before ids were scoped per client keeps
 * its `event-<guid>` stream (docs/identifiers.md); everything else is `event-<client>:<id>`.
 */
async function eventStreamOf(services: Services, clientId: string, eventId: string): Promise<string> {
  const scoped = eventStream(clientId, eventId);
  // Old streams are named by a lowercase GUID; an id in another case is a newer event's own.
  if (!isUuid(eventId) || eventId !== eventId.toLowerCase()) return scoped;
  if ((await services.eventStore.readStream(scoped, { maxCount: 1 })).length > 0) return scoped;
  const [first] = await services.eventStore.readStream(legacyEventStream(eventId), { maxCount: 1 });
  return first && (first.data as { clientId?: string }).clientId === clientId ? legacyEventStream(eventId) : scoped;
}

/** The read-model key of a client's event. */
export const eventKey = (clientId: string, eventId: string): string => exactKey(clientId, eventId);

/**
 * The id a caller's event id is stored under. An event id is a plain string, kept and compared as
 * sent (docs/identifiers.md, Case). Before that rule a GUID-shaped id was lowercased when stored,
 * so `ABC…` was stored as `abc…`: a request naming `ABC…` when no event has that exact id, and
 * the caller's event `abc…` is such an older one (no `idAsSent`), means that event, as it always
 * did. Every other id is itself (an unknown one included: the caller's 404 or create follows).
 */
export async function storedEventId(services: Services, clientId: string, eventId: string): Promise<string> {
  const lower = eventId.toLowerCase();
  if (lower === eventId || !isUuid(eventId)) return eventId;
  const events = services.readStore.collection<EventDoc>('events');
  if (await events.get(eventKey(clientId, eventId), { readOnly: true })) return eventId;
  const old = (await events.get(eventKey(clientId, lower), { readOnly: true })) ?? (await events.get(lower, { readOnly: true }));
  return old && old.clientId === clientId && !old.idAsSent ? lower : eventId;
}

/** An event of this client, or null (another client's events are not seen). */
export async function findEvent(services: Services, clientId: string, eventId: string): Promise<EventView | null> {
  const events = services.readStore.collection<EventDoc>('events');
  // Read-only: toEventView builds a new object from the stored document.
  const doc = await events.get(eventKey(clientId, eventId), { readOnly: true });
  if (doc) return toEventView(doc);
  // A document written before the keys were scoped (until `projections rebuild events`).
  const legacy = isUuid(eventId) && eventId === eventId.toLowerCase() ? await events.get(eventId, { readOnly: true }) : null;
  return legacy && legacy.clientId === clientId ? toEventView(legacy) : null;
}

/** An event of this client; another client's is reported as not found. */
export async function getEvent(services: Services, clientId: string, eventId: string): Promise<EventView> {
  const event = await findEvent(services, clientId, eventId);
  if (!event) throw new DomainError('not_found', 'event not found');
  return event;
}

/**
 * The client's events with this title (exactly), each once: a document written before the keys
 * were scoped is left out when its scoped one is there too (until `projections rebuild events`).
 */
export async function eventsTitled(services: Services, clientId: string, title: string): Promise<EventView[]> {
  const { items } = await services.readStore.collection<EventDoc>('events').find({ clientId, title }, { sort: { startTime: 1 }, limit: 1_000, readOnly: true });
  const byId = new Map<string, EventView>();
  for (const doc of items) {
    const view = toEventView(doc);
    if (!byId.has(view.id) || !isUuid(doc._id)) byId.set(view.id, view);
  }
  return [...byId.values()];
}

/** The client's events, by start time. */
export async function listEvents(services: Services, clientId: string, page: { limit: number; cursor?: string }) {
  const result = await services.readStore.collection<EventDoc>('events').find(
    { clientId },
    { sort: { startTime: 1 }, limit: page.limit, ...(page.cursor ? { cursor: page.cursor } : {}) },
  );
  return { items: result.items.map(toEventView), ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}) };
}
