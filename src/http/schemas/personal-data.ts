import { z } from 'zod';
import { registry } from '../openapi.js';
import { getOpenApiMetadata } from '@asteasolutions/zod-to-openapi';
import { PlainId, RefId, VisibleText, Timestamp, named } from './common.js';
import { ex } from './example-values.js';
import { GuestHistoryEntry, GuestHistoryResponse, GuestResponse, ScanRecord } from './guest.js';
import { InvitationResponse } from './comms.js';
import { CommsEventResponse, DeliveryResponse } from './webhook.js';

const reason = VisibleText(1000).openapi({ description: 'Why the data is erased (kept in the audit trail; put no personal data in it)' });

export const EraseBody = registry.register(
  'EraseGuest',
  z
    .object({
      reason,
      eventId: PlainId.optional().openapi({ description: 'The event of the guest; needed when a customId is used in several events' }),
    })
    .openapi({ example: { reason: 'GDPR art. 17 request, ticket 4711' } }),
);

export const EraseBatchBody = registry.register(
  'EraseGuests',
  z
    .object({
      reason,
      ids: z.array(RefId).min(1).max(200, 'at most 200 guest ids or customIds per call').optional().openapi({ description: 'Up to 200 guest ids or customIds of the event' }),
      all: z.literal(true).optional().openapi({ description: 'Every guest of the event (instead of ids)' }),
    })
    .refine((b) => (b.ids !== undefined) !== (b.all !== undefined), { message: 'give either ids or all: true', path: ['ids'] })
    .openapi({
      description: 'Names the guests by exactly one of ids or all.',
      oneOf: [named('ids', { type: 'array', items: { type: 'string' } }), named('all', { type: 'boolean', const: true })],
      example: { reason: 'event data no longer needed', ids: [ex.guestId] },
    }),
);

const erasure = z.object({
  id: z.string(),
  eventId: z.string(),
  erased: z.literal(true),
  erasedAt: Timestamp,
  erasedBy: z.string().openapi({ description: 'The client, team member or `retention` that erased it (the first erasure)' }),
  reason: z.string(),
});

const erasureExample = { id: ex.guestId, eventId: ex.eventId, erased: true as const, erasedAt: ex.created, erasedBy: ex.clientId, reason: 'GDPR art. 17 request, ticket 4711' };

export const ErasureResponse = registry.register('GuestErasure', erasure.openapi({ example: erasureExample }));

export const ErasureBatchResponse = registry.register(
  'GuestErasures',
  z.object({ erased: z.number().int(), guests: z.array(erasure) }).openapi({ example: { erased: 1, guests: [erasureExample] } }),
);

const exampleOf = (schema: z.ZodType) => getOpenApiMetadata(schema).example as Record<string, unknown>;

/** A comms event as the webhook sent it, with its delivery as the service keeps it (no id: it is the event's). */
const personalCommsEvent = CommsEventResponse.omit({ deliveryStatus: true }).extend({
  delivery: DeliveryResponse.omit({ id: true })
    .extend({
      sourceEventId: z.string().openapi({ description: 'The recorded event the webhook tells of' }),
      redeliveries: z.number().int().optional().openapi({ description: 'Times the client asked for it again' }),
    })
    .nullable()
    .openapi({ description: 'Its webhook delivery (status, attempts with URL and answer); null when none was made' }),
});

export const PersonalDataResponse = registry.register(
  'GuestPersonalData',
  z
    .object({
      guestId: z.string(),
      eventId: z.string(),
      generatedAt: Timestamp,
      guest: GuestResponse.openapi({ description: 'The guest as GET /guest/{id} shows it' }),
      invitations: z.array(InvitationResponse).openapi({ description: 'Every invitation email: recipient, status, provider reports, history' }),
      commsEvents: z.array(personalCommsEvent).openapi({ description: 'The comms events about the guest’s emails as the webhook sends them (id, type, createdAt, data), each with its webhook `delivery` (status, attempts with URL and answer) or null' }),
      scans: z.array(ScanRecord).openapi({ description: 'Every scan of the guest at the door' }),
      unmatchedScans: z.array(ScanRecord).openapi({ description: 'Door scans of its event that matched no guest but looked up one of the guest’s values (id, a barcode or customId it has or had), with what they looked up (`lookup`)' }),
      suppressions: z
        .array(z.object({ email: z.string(), reason: z.string(), at: Timestamp }))
        .openapi({ description: 'The suppression-list entries of the guest’s addresses (one it has or had, or an invitation went to): the address, the provider’s report that suppressed it (bounced, dropped, spam_reported, unsubscribed) and when' }),
      ticketCode: z.string().nullable().openapi({ description: "The guest's valid signed ticket code (docs/tickets.md), null when it has none" }),
      history: z.array(GuestHistoryEntry).openapi({ description: 'Every event of the guest and its invitations, decrypted' }),
    })
    .openapi({
      example: {
        guestId: ex.guestId,
        eventId: ex.eventId,
        generatedAt: ex.scannedAt,
        guest: exampleOf(GuestResponse),
        invitations: [exampleOf(InvitationResponse)],
        commsEvents: [],
        scans: [exampleOf(ScanRecord)],
        unmatchedScans: [],
        suppressions: [],
        ticketCode: null,
        history: [(exampleOf(GuestHistoryResponse).events as unknown[])[0]],
      },
    }),
);
