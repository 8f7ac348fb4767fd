import { z } from 'zod';
import { DateTime, PlainId, TimeZoneId } from './common.js';
import { registry } from '../openapi.js';

export const EventBody = registry.register(
  'Event',
  z.object({
    id: PlainId.optional().openapi({ description: 'Event id, any string of 1-128 characters (scoped to the caller); generated when absent. An existing id updates that event.' }),
    title: z.string().trim().min(1).max(500),
    startTime: DateTime,
    endTime: DateTime,
    active: z.boolean().optional(),
    timeZoneId: TimeZoneId.optional(),
    tags: z.string().max(4000).optional(),
    customData: z.string().max(100_000).optional(),
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
    created: z.string(),
    updated: z.string(),
  }),
);

export const IdParams = z.object({ id: PlainId });
