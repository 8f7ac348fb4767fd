import { eventDecider, eventStream, type EventDetails } from '../domain/event.js';
import { DomainError } from '../domain/decider.js';
import { newId } from '../shared/ids.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';

export interface EventView extends EventDetails {
  id: string;
  created: string;
  updated: string;
}

type EventDoc = { _id: string; clientId: string; eventId: string; created: string; updated: string } & EventDetails;

export function toEventView(doc: EventDoc): EventView {
  const { _id, clientId: _c, eventId: _e, ...rest } = doc;
  return { id: _id, ...rest };
}

/** Create an event, or update it when `id` names an existing event of the same client. */
export async function saveEvent(
  services: Services,
  context: CommandContext,
  input: EventDetails & { id?: string },
): Promise<EventView> {
  const { id, ...details } = input;
  const eventId = id ?? newId();
  const result = await handleCommand(services.eventStore, eventDecider, eventStream(eventId), {
    type: 'SaveEvent',
    eventId,
    clientId: context.tenantId,
    details,
  }, context);
  await services.readYourWrites(result.position);
  return getEvent(services, context.tenantId, eventId);
}

/** An event of this client; another client's is reported as not found. */
export async function getEvent(services: Services, clientId: string, eventId: string): Promise<EventView> {
  const doc = await services.readStore.collection<EventDoc>('events').get(eventId.toLowerCase());
  if (!doc || doc.clientId !== clientId) throw new DomainError('not_found', 'event not found');
  return toEventView(doc);
}

/** The client's events, by start time. */
export async function listEvents(services: Services, clientId: string, page: { limit: number; cursor?: string }) {
  const result = await services.readStore.collection<EventDoc>('events').find(
    { clientId },
    { sort: { startTime: 1 }, limit: page.limit, ...(page.cursor ? { cursor: page.cursor } : {}) },
  );
  return { items: result.items.map(toEventView), ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}) };
}
