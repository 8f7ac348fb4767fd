import { z } from 'zod';
import { commsEventTypes } from '../../domain/webhook.js';
import { registry } from '../openapi.js';
import { DateTime, Guid, nullAsAbsent, PageQuery, pageOf, Timestamp } from './common.js';
import { SEND_CORRELATION_ID_MAX } from './comms.js';
import { ex } from './example-values.js';
import { WEBHOOK_URL_PATTERN } from '../../shared/url-guard.js';

export const WebhookBody = registry.register(
  'WebhookConfiguration',
  z.object({
    url: z
      .string()
      .min(1)
      .max(2048)
      .openapi({
        description:
          'HTTPS URL that receives the signed POSTs: a DNS name (no IP address), an optional port, a path and query of URL characters (no fragment). ' +
          'Refused (400 on `url`): other forms, localhost, and hosts that resolve to loopback, private, link-local, multicast or reserved addresses. ' +
          'A host that does not resolve yet is accepted (every delivery resolves again).',
        // The same pattern the service checks (src/shared/url-guard.ts).
        pattern: WEBHOOK_URL_PATTERN.source,
        example: 'https://example.com/hooks/comms',
      }),
  }).openapi({ example: { url: 'https://example.com/hooks/comms' } }),
);

export const WebhookSecretResponse = registry.register(
  'WebhookSecret',
  z.object({
    url: z.string(),
    secret: z
      .string()
      .nullable()
      .openapi({
        description:
          'Signing secret, shown once: on first configuration and on rotation. Store it now. null when the call changed the URL of a configured webhook (its secret stays; rotate for a new one)',
      }),
  }).openapi({ example: { url: 'https://example.com/hooks/comms', secret: 'whsec_9fQm2xV8cZ1bN4kL7pR0tY3wE6aS5dF2gH8jK1lM0qU' } }),
);

export const WebhookResponse = registry.register(
  'Webhook',
  z.object({
    url: z.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    secretRotatedAt: Timestamp.optional(),
  }).openapi({ example: { url: 'https://example.com/hooks/comms', createdAt: ex.created, updatedAt: ex.created } }),
);

// Named components, so a generated client names these types (`WebhookDeleted`), not after the operation.
export const WebhookDeletedResponse = registry.register(
  'WebhookDeleted',
  z.object({ url: z.string(), deleted: z.literal(true) }).openapi({ example: { url: 'https://example.com/hooks/comms', deleted: true } }),
);

export const WebhookTestBody = registry.register(
  'WebhookTestRequest',
  z
    .object({
      // Bounded as a send's: the comms_events document and every delivery's body hold it (MongoDB's 16 MiB; docs/webhooks.md).
      correlationId: nullAsAbsent(z.string().max(SEND_CORRELATION_ID_MAX, `at most ${SEND_CORRELATION_ID_MAX} characters, as a send's correlationId`)).openapi({
        description: `Echoed as data.correlationId in the test event (empty or null: none); at most ${SEND_CORRELATION_ID_MAX} characters, as a send's`,
      }),
    })
    .openapi({ example: { correlationId: 'webhook-check-1' } }),
);

export const WebhookTestResponse = registry.register(
  'WebhookTest',
  z.object({
    webhookId: z.string().openapi({ description: 'X-Service-Webhook-Id (and body id) of the comms.test delivery' }),
    type: z.literal('comms.test'),
  }).openapi({ example: { webhookId: ex.webhookId, type: 'comms.test' } }),
);

const CommsEventType = z.enum(commsEventTypes);
const DeliveryStatus = z.enum(['pending', 'retrying', 'delivered', 'failed', 'dead']);

export const DeliveryResponse = registry.register(
  'WebhookDelivery',
  z.object({
    id: z.string().openapi({ description: 'The webhook id (X-Service-Webhook-Id), the same across retries and redeliveries' }),
    type: z.string(),
    status: DeliveryStatus.openapi({
      description: 'pending (not tried yet), retrying (next attempt at nextAttemptAt), delivered, failed (final answer such as a 4xx), dead (attempts used up; in the dead letters)',
    }),
    attempts: z.number().int(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    nextAttemptAt: Timestamp.optional(),
    lastAttemptAt: Timestamp.optional(),
    lastStatusCode: z.number().int().optional(),
    lastError: z.string().optional(),
    deliveredAt: Timestamp.optional(),
    failureReason: z.string().optional(),
    deadLetteredAt: Timestamp.optional(),
    leaseUntil: z.string().optional().openapi({
      description: 'While an attempt is under way: when its lease runs out (renewed while the POST runs); another worker takes the delivery over after it. Absent otherwise',
    }),
    attemptLog: z.array(
      z.object({
        attempt: z.number().int(),
        attemptedAt: Timestamp,
        url: z.string(),
        durationMs: z.number(),
        statusCode: z.number().int().optional(),
        error: z.string().optional(),
      }),
    ),
  }).openapi({
    example: {
      id: ex.webhookId,
      type: 'comms.sent',
      status: 'delivered',
      attempts: 1,
      createdAt: '2026-11-21T10:05:01.000Z',
      updatedAt: '2026-11-21T10:05:02.000Z',
      lastAttemptAt: '2026-11-21T10:05:02.000Z',
      lastStatusCode: 200,
      deliveredAt: '2026-11-21T10:05:02.000Z',
      attemptLog: [{ attempt: 1, attemptedAt: '2026-11-21T10:05:02.000Z', url: 'https://example.com/hooks/comms', durationMs: 84, statusCode: 200 }],
    },
  }),
);

export const DeliveryListQuery = PageQuery.extend({
  status: DeliveryStatus.optional().openapi({ description: 'Only the deliveries with this status' }),
  type: CommsEventType.optional().openapi({ description: 'Only the deliveries of this comms event type' }),
  from: DateTime.optional().openapi({ description: 'Deliveries created at or after this time' }),
  to: DateTime.optional().openapi({ description: 'Deliveries created before this time' }),
});

export const DeliveryListResponse = pageOf(DeliveryResponse);

export const DeliveryParams = z.object({ id: Guid.openapi({ description: 'The delivery id (the webhook id its body carries)' }) });

export const CommsEventResponse = registry.register(
  'CommsEvent',
  z.object({
    id: z.string().openapi({ description: 'Webhook id, as in the webhook body' }),
    type: z.string(),
    createdAt: Timestamp,
    data: z.object({
      attendeeId: z.string().openapi({ format: 'uuid' }),
      templateId: z.string().openapi({ format: 'uuid' }),
      attendeeInvitationId: z.string().openapi({ format: 'uuid' }),
      status: z.string(),
      error: z.string().nullable(),
      correlationId: z.string().optional(),
    }),
    deliveryStatus: DeliveryStatus.optional().openapi({ description: 'Where its webhook delivery stands; absent when none was made' }),
  }).openapi({
    example: {
      id: ex.webhookId,
      type: 'comms.sent',
      createdAt: '2026-11-21T10:05:01.000Z',
      data: {
        attendeeId: ex.guestId,
        templateId: ex.templateId,
        attendeeInvitationId: ex.invitationId,
        status: 'sent',
        error: null,
        correlationId: 'crm-batch-42',
      },
      deliveryStatus: 'delivered',
    },
  }),
);

export const CommsEventsQuery = PageQuery.extend({
  since: DateTime.optional().openapi({ description: 'Events created at or after this time' }),
  type: CommsEventType.optional().openapi({ description: 'Only the events of this type' }),
});

export const CommsEventsResponse = pageOf(CommsEventResponse);
