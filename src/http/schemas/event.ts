import { z } from 'zod';
import { DateTime, PlainId, TimeZoneId } from './common.js';
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
    id: PlainId.optional().openapi({ description: 'Event id, any string of 1-128 characters (scoped to the caller); generated when absent. An existing id updates that event.' }),
    // Spec: string, required. Any string, kept as given ("" and white space too: docs/api.md, Strings).
    title: z.string(),
    startTime: DateTime,
    endTime: DateTime,
    active: z.boolean().optional(),
    timeZoneId: TimeZoneId.optional(),
    tags: z.string().optional(),
    customData: z.string().optional(),
    retentionDays: z.number().int().min(0).max(36_500).optional().openapi({
      description: "Erase the guests' personal data this many days after endTime (0: right after it); absent: kept (docs/personal-data.md)",
    }),
  })
    .openapi({
      description: 'endTime must be after startTime (else 400 on `endTime`).',
      example: eventExample,
    }),
);

export const EventResponse = registry.register(
  'EventResponse',
  z.object({
    id: z.string(),
    title: z.string(),
    startTime: z.string(),
    endTime: z.string(),
    active: z.boolean().optional(),
    timeZoneId: z.string().optional(),
    tags: z.string().optional(),
    customData: z.string().optional(),
    retentionDays: z.number().int().optional(),
    created: z.string(),
    updated: z.string(),
  }).openapi({
    example: {
      ...eventExample,
      created: ex.created,
      updated: ex.created,
    },
  }),
);

export const IdParams = z.object({ id: PlainId });
