import type { EventFilter } from '../adapters/eventstore/port.js';

/** Which stored events the relay copies to which bus topic. Keys are stream names, so a stream stays in order. */
export interface RelayRoute {
  topic: string;
  filter: EventFilter;
}

export const topics = {
  /** Changes to events (occasions): EventCreated, EventUpdated. */
  eventChanges: 'checkin.events.v1',
} as const;

export const relayRoutes: RelayRoute[] = [{ topic: topics.eventChanges, filter: { streamPrefixes: ['event-'] } }];
