/**
 * The bus form of a stored event, both ways. The relay publishes each event as JSON of the stored
 * event, keyed by its stream, with `event-id` (consumers dedupe on it), `event-type`,
 * `event-position`, `tenant-id` and the request's trace headers.
 *
 * An event whose message would exceed the bus's `maxMessageBytes` (a Kafka topic's
 * `max.message.bytes`; a 16 MB request body can carry a description of several MB) is published
 * as a reference instead: the stored event without `data` (id, type, streamName, revision,
 * position, recordedAt, metadata) and the header `x-data-omitted: too-large`. Consumers in this
 * service read the whole event from the event store (`eventOfMessage`); consumers outside read it
 * through the API (docs/operations.md, Kafka message size). Without a limit (the embedded bus)
 * every event goes whole.
 */
import { dataOmittedHeader, messageBytes, type BusMessage, type OutgoingMessage } from '../adapters/bus/port.js';
import type { EventStore, StoredEvent } from '../adapters/eventstore/port.js';
import { traceHeaders } from '../observability/trace.js';

export { dataOmittedHeader };

export interface ToMessageOptions {
  /** The bus's `maxMessageBytes`: above it the event goes without its data. */
  maxBytes?: number;
  /** More headers (a dead letter's `x-dlq-*`), counted in the size. */
  headers?: Record<string, string>;
}

/** The bus form of a stored event; see the file comment for when `data` is left out. */
export function toMessage(event: StoredEvent, options: ToMessageOptions = {}): OutgoingMessage {
  const headers = {
    'event-id': event.id,
    'event-type': event.type,
    'event-position': String(event.position),
    'tenant-id': event.metadata.tenantId,
    ...traceHeaders(event.metadata),
    ...options.headers,
  };
  const whole: OutgoingMessage = { key: event.streamName, value: JSON.stringify(event), headers };
  if (options.maxBytes === undefined || messageBytes(whole) <= options.maxBytes) return whole;
  const { data: _data, ...reference } = event;
  return { key: event.streamName, value: JSON.stringify(reference), headers: { ...headers, [dataOmittedHeader]: 'too-large' } };
}

/** True when the message is a relayed event published without its data. */
export const dataOmitted = (message: { headers?: Record<string, string> }): boolean => message.headers?.[dataOmittedHeader] !== undefined;

/** The stored event as published (without `data` when `dataOmitted`): use `eventOfMessage` to read one whole. */
export const fromMessage = (value: string): StoredEvent => JSON.parse(value) as StoredEvent;

/**
 * The whole stored event of a relayed message: the message itself, or, when it was published
 * without its data, the event read from the event store at its stream and revision.
 */
export async function eventOfMessage(message: Pick<BusMessage, 'value' | 'headers'>, eventStore: EventStore): Promise<StoredEvent> {
  const published = fromMessage(message.value);
  if (!dataOmitted(message)) return published;
  const [stored] = await eventStore.readStream(published.streamName, { fromRevision: published.revision, maxCount: 1 });
  if (!stored || stored.id !== published.id) {
    throw new Error(
      `event ${published.id} was published without its data and is not in the event store at ${published.streamName} revision ${published.revision}: ` +
        'check that this service reads the event store the relay published from',
    );
  }
  return stored;
}
