import { z } from 'zod';
import { DateTime, nullAsAbsent, PlainId, retentionDays, timeZoneName } from './common.js';
import { registry } from '../openapi.js';
import { ex } from './example-values.js';

/** The one event the document's examples show (request and answer). */
const eventExample = {
  id: ex.eventId,
  title: 'Winter gala',
  startTime: ex.start,
  endTime: ex.end,
  active: true,
  timeZoneId: 'Europe/Amsterdam',
  tags: 'gala,vip',
  customData: '{"room":"Main hall"}',
};

export const EventBody = registry.register(
  'Event',
  z.object({
    // null is "not given", as in every optional field: a new event with an id of the service's making.
    id: nullAsAbsent(PlainId).openapi({
      type: ['string', 'null'],
      description: 'Event id, any string of 1-128 characters (scoped to the caller); generated when absent or null. An existing id updates that event.',
    }),
    // Spec: string, required. Any string, kept as given ("" and white space too: docs/api.md, Strings).
    title: z.string(),
    startTime: DateTime,
    endTime: DateTime,
    // null is "not given", as a field left out (an update keeps the event's value): an Event read
    // back answers its unset fields as null, and .NET and Java serializers write null for every
    // property left unset (docs/api.md, Bodies).
    active: nullAsAbsent(z.boolean()),
    timeZoneId: nullAsAbsent(timeZoneName()),
    tags: nullAsAbsent(z.string()),
    customData: nullAsAbsent(z.string()),
    retentionDays: retentionDays(
      "Erase the guests' personal data this many days after endTime (0: right after it); `\"\"` removes the event's own (the client's default applies); absent or null: kept as it is (docs/personal-data.md)",
    ),
  })
    .openapi({
      description: 'endTime must be after startTime (else 400 on `endTime`).',
      example: eventExample,
    }),
);

/** Spec: Event, in its order; every answer holds each field, a text or flag not set is null (docs/api.md, Answers). */
export const eventFields = ['title', 'startTime', 'endTime', 'id', 'active', 'timeZoneId', 'tags', 'customData'] as const;

export const EventResponse = registry.register(
  'EventResponse',
  z.object({
    title: z.string(),
    startTime: z.string().openapi({ format: 'date-time' }),
    endTime: z.string().openapi({ format: 'date-time' }),
    id: z.string(),
    active: z.boolean().nullable().openapi({ description: 'null when not set' }),
    timeZoneId: z.string().nullable().openapi({ description: 'null when not set' }),
    tags: z.string().nullable().openapi({ description: 'null when not set' }),
    customData: z.string().nullable().openapi({ description: 'null when not set' }),
    retentionDays: z.number().int().optional(),
    ianaTimeZone: z.string().optional().openapi({
      description:
        "The IANA time zone the service reads and shows this event's times on: its timeZoneId (a Windows name mapped to IANA), else the client's, else UTC (docs/identifiers.md, Time zones). Not an input.",
      example: 'Europe/Amsterdam',
    }),
    created: z.string().openapi({ format: 'date-time' }),
    updated: z.string().openapi({ format: 'date-time' }),
  }).openapi({
    example: {
      ...eventExample,
      created: ex.created,
      updated: ex.created,
    },
  }),
);

export const IdParams = z.object({ id: PlainId });
