import { z } from 'zod';
import { commsEventTypes } from '../../domain/webhook.js';
import { registry } from '../openapi.js';
import { DateTime, Guid, PageQuery, pageOf } from './common.js';

export const WebhookBody = registry.register(
  'WebhookConfiguration',
  z.object({
    url: z
      .string()
      .trim()
      .min(1)
      .max(2048)
      .openapi({ description: 'HTTPS URL that receives the signed POSTs', example: 'https://example.com/hooks/comms' }),
  }),
);

export const WebhookSecretResponse = registry.register(
  'WebhookSecret',
  z.object({
    url: z.string(),
    secret: z
      .string()
      .optional()
      .openapi({ description: 'Signing secret, shown once: on first configuration and on rotation. Store it now.' }),
  }),
);

export const WebhookResponse = registry.register(
  'Webhook',
  z.object({
    url: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    secretRotatedAt: z.string().optional(),
  }),
);

export const WebhookDeletedResponse = z.object({ url: z.string(), deleted: z.literal(true) });

export const WebhookTestBody = z.object({
  correlationId: z.string().max(200).optional().openapi({ description: 'Echoed as data.correlationId in the test event' }),
});

export const WebhookTestResponse = registry.register(
  'WebhookTest',
  z.object({
    webhookId: z.string().openapi({ description: 'X-Service-Webhook-Id (and body id) of the comms.test delivery' }),
    type: z.literal('comms.test'),
  }),
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
    createdAt: z.string(),
    updatedAt: z.string(),
    nextAttemptAt: z.string().optional(),
    lastAttemptAt: z.string().optional(),
    lastStatusCode: z.number().int().optional(),
    lastError: z.string().optional(),
    deliveredAt: z.string().optional(),
    failureReason: z.string().optional(),
    deadLetteredAt: z.string().optional(),
    attemptLog: z.array(
      z.object({
        attempt: z.number().int(),
        attemptedAt: z.string(),
        url: z.string(),
        durationMs: z.number(),
        statusCode: z.number().int().optional(),
        error: z.string().optional(),
      }),
    ),
  }),
);

export const DeliveryListQuery = PageQuery.extend({
  status: DeliveryStatus.optional(),
  type: CommsEventType.optional(),
  from: DateTime.optional().openapi({ description: 'Deliveries created at or after this time' }),
  to: DateTime.optional().openapi({ description: 'Deliveries created before this time' }),
});

export const DeliveryListResponse = pageOf(DeliveryResponse);

export const DeliveryParams = z.object({ id: Guid });

export const CommsEventResponse = registry.register(
  'CommsEvent',
  z.object({
    id: z.string().openapi({ description: 'Webhook id, as in the webhook body' }),
    type: z.string(),
    createdAt: z.string(),
    data: z.object({
      attendeeId: z.string(),
      templateId: z.string(),
      attendeeInvitationId: z.string(),
      status: z.string(),
      error: z.string().nullable(),
      correlationId: z.string().optional(),
    }),
    deliveryStatus: DeliveryStatus.optional().openapi({ description: 'Where its webhook delivery stands; absent when none was made' }),
  }),
);

export const CommsEventsQuery = PageQuery.extend({
  since: DateTime.optional().openapi({ description: 'Events created at or after this time' }),
  type: CommsEventType.optional(),
});

export const CommsEventsResponse = pageOf(CommsEventResponse);
