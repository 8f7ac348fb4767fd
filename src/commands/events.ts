import { eventDecider, eventStream, legacyEventStream, type EventDetails } from '../domain/event.js';
import { DomainError } from '../domain/decider.js';
import { isUuid, newId, normalizeId, scopedKey } from '../shared/ids.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';

export interface EventView extends EventDetails {
  id: string;
  created: string;
  updated: string;
}

export type EventDoc = { _id: string; clientId: string; eventId: string; created: string; updated: string } & EventDetails;

export function toEventView(doc: EventDoc): EventView {
  const { _id, clientId: _c, eventId, ...rest } = doc;
  return { id: eventId, ...rest };
}

/** Create an event, or update it when `id` names an existing event of the same client. */
export async function saveEvent(
  services: Services,
  context: CommandContext,
  input: EventDetails & { id?: string },
): Promise<EventView> {
  const { id, ...details } = input;
  const eventId = normalizeId(id ?? newId());
  const stream = await eventStreamOf(services, context.tenantId, eventId);
  const result = await handleCommand(services.eventStore, eventDecider, stream, {
    type: 'SaveEvent',
    eventId,
    clientId: context.tenantId,
    details,
  }, context);
  await services.readYourWrites(result.position);
  return getEvent(services, context.tenantId, eventId);
}

/**
 * The stream of this client's event. An event created before ids were scoped per client keeps
 * its `event-<guid>` stream (docs/identifiers.md); everything else is `event-<client>:<id>`.
 */
async function eventStreamOf(services: Services, clientId: string, eventId: string): Promise<string> {
  const scoped = eventStream(clientId, eventId);
  if (!isUuid(eventId)) return scoped;
  if ((await services.eventStore.readStream(scoped, { maxCount: 1 })).length > 0) return scoped;
  const [first] = await services.eventStore.readStream(legacyEventStream(eventId), { maxCount: 1 });
  return first && (first.data as { clientId?: string }).clientId === clientId ? legacyEventStream(eventId) : scoped;
}

/** The read-model key of a client's event. */
export const eventKey = (clientId: string, eventId: string): string => scopedKey(clientId, eventId);

/** An event of this client, or null (another client's events are not seen). */
export async function findEvent(services: Services, clientId: string, eventId: string): Promise<EventView | null> {
  const events = services.readStore.collection<EventDoc>('events');
  // Read-only: toEventView builds a new object from the stored document.
  const doc = await events.get(eventKey(clientId, eventId), { readOnly: true });
  if (doc) return toEventView(doc);
  // A document written before the keys were scoped (until `projections rebuild events`).
  const legacy = isUuid(eventId) ? await events.get(eventId.toLowerCase(), { readOnly: true }) : null;
  return legacy && legacy.clientId === clientId ? toEventView(legacy) : null;
}

/** An event of this client; another client's is reported as not found. */
export async function getEvent(services: Services, clientId: string, eventId: string): Promise<EventView> {
  const event = await findEvent(services, clientId, eventId);
  if (!event) throw new DomainError('not_found', 'event not found');
  return event;
}

/**
 * The client's one event with this title, start and end (the export's Event body without `id`,
 * docs/export.md): none is 404, several are 409 `ambiguous_event` asking for the `id`. The times
 * are compared as instants (both are stored and parsed as UTC), the title exactly.
 */
export async function getEventMatching(
  services: Services,
  clientId: string,
  details: Pick<EventDetails, 'title' | 'startTime' | 'endTime'>,
): Promise<EventView> {
  const { title, startTime, endTime } = details;
  const { items } = await services.readStore
    .collection<EventDoc>('events')
    .find({ clientId, title, startTime, endTime }, { sort: { startTime: 1 }, limit: 2 });
  if (items.length === 0) throw new DomainError('not_found', 'event not found: no event of yours has this title, startTime and endTime');
  if (items.length > 1) {
    throw new DomainError('conflict', 'several of your events have this title, startTime and endTime; add the event\'s id to say which', {
      code: 'ambiguous_event',
      errors: [{ path: 'id', message: 'required: more than one of your events has this title, startTime and endTime' }],
    });
  }
  return toEventView(items[0]!);
}

/** The client's events, by start time. */
export async function listEvents(services: Services, clientId: string, page: { limit: number; cursor?: string }) {
  const result = await services.readStore.collection<EventDoc>('events').find(
    { clientId },
    { sort: { startTime: 1 }, limit: page.limit, ...(page.cursor ? { cursor: page.cursor } : {}) },
  );
  return { items: result.items.map(toEventView), ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}) };
}
