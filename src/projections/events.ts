import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { EventEvent } from '../domain/event.js';
import type { Projection } from './projection.js';
import { exactKey } from '../shared/ids.js';

/** `events` read model: one document per event (occasion), owned by a client. */
export const eventsProjection: Projection = {
  name: 'events',
  filter: { streamPrefixes: ['event-'] },
  collections: [
    {
      name: 'events',
      indexes: [{ name: 'clientId_startTime', keys: { clientId: 1, startTime: 1 } }],
    },
  ],
  apply(stored: StoredEvent) {
    const event = stored as unknown as StoredEvent & EventEvent;
    if (event.type !== 'EventCreated' && event.type !== 'EventUpdated') return [];
    // An update replaces the details: optional fields it leaves out are removed.
    const absent = optionalFields.filter((field) => event.data[field] === undefined);
    return [
      {
        kind: 'update',
        collection: 'events',
        id: exactKey(event.data.clientId, event.data.eventId),
        upsert: true,
        update: {
          $set: { ...event.data, updated: stored.metadata.occurredAt },
          $setOnInsert: { created: stored.metadata.occurredAt },
          ...(absent.length > 0 ? { $unset: Object.fromEntries(absent.map((f) => [f, ''])) } : {}),
        },
      },
    ];
  },
};

const optionalFields = ['active', 'timeZoneId', 'tags', 'customData', 'retentionDays'] as const;
