import type { EventFilter } from '../adapters/eventstore/port.js';
import { commsSourceEventTypes, commsSourceStreamPrefixes } from '../domain/webhook.js';

/** Which stored events the relay copies to which bus topic. Keys are stream names, so a stream stays in order. */
export interface RelayRoute {
  topic: string;
  filter: EventFilter;
}

export const topics = {
  /** Changes to events (occasions): EventCreated, EventUpdated. */
  eventChanges: 'checkin.events.v1',
  /** Comms events for the webhook dispatcher (comms.test today; invitation send outcomes); its `.dlq` holds dead deliveries. */
  commsEvents: 'comms.events.v1',
  /** InvitationRequested (guest streams): the send worker emails the invitation. */
  invitations: 'comms.invitations.v1',
  /** WebhookRedeliveryRequested: the dispatcher sends a delivery again. */
  webhookRedeliveries: 'comms.webhook-redeliveries.v1',
} as const;

export const relayRoutes: RelayRoute[] = [
  { topic: topics.eventChanges, filter: { streamPrefixes: ['event-'] } },
  { topic: topics.commsEvents, filter: { streamPrefixes: commsSourceStreamPrefixes, eventTypes: [...commsSourceEventTypes] } },
  { topic: topics.invitations, filter: { streamPrefixes: ['guest-'], eventTypes: ['InvitationRequested'] } },
  { topic: topics.webhookRedeliveries, filter: { streamPrefixes: ['webhookdelivery-'], eventTypes: ['WebhookRedeliveryRequested'] } },
];
