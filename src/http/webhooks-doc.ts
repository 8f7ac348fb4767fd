import { z } from 'zod';
import { commsEventTypes, type CommsEventType } from '../domain/webhook.js';
import { registry } from './openapi.js';
import { ex } from './schemas/example-values.js';

/**
 * The outgoing comms webhooks in the document's `webhooks` section (OpenAPI 3.1): one entry
 * per event type, with the headers, the body and the signature scheme a receiver verifies.
 * The body is src/domain/webhook.ts `webhookBody`; the headers are src/workers/webhook-sender.ts's.
 */
const triggers: Record<CommsEventType, string> = {
  'comms.sent': 'The send job handed the email to the delivery provider.',
  'comms.failed': 'The send failed before the provider accepted the email (transient failures are retried first); `data.error` says why.',
  'comms.skipped': 'A retry found the email already sent (idempotency check): nothing was sent again.',
  'comms.delivered': 'The provider confirmed delivery to the recipient’s mail server.',
  'comms.opened': 'The recipient opened the email; one event per open.',
  'comms.bounced': 'The recipient’s mail server rejected the message.',
  'comms.dropped': 'The provider dropped the message (suppression list, invalid address, ...); `data.error` says why.',
  'comms.spam_reported': 'The recipient marked the email as spam.',
  'comms.unsubscribed': 'The recipient clicked unsubscribe.',
  'comms.test': 'Produced by POST /comms/v1/api/comms/webhook/test (nil GUIDs in data); safe to ignore.',
};

const signatureScheme = [
  '**Signature** (`X-Service-Signature: t=<unix seconds>,v1=<64 lowercase hex>`): `v1` is HMAC-SHA256, keyed with the',
  'webhook secret (the whole `whsec_...` string), of `t`, a period, and the exact raw body bytes. A receiver reads the raw',
  'body without re-serializing it, rejects when |now − t| > 300 s, recomputes the HMAC and compares it with every `v1`',
  'in constant time (ignoring versions it does not know), and answers 401 when verification fails.',
  '**Delivery**: answer 2xx quickly. 408, 429, 5xx, timeouts (10 s) and connection errors are retried with exponential',
  'backoff (about 10 attempts over 8 hours) with the same `X-Service-Webhook-Id`; dedupe on it. Other answers are final.',
  'Order is not guaranteed. Missed events: GET /comms/v1/api/comms/events?since=...',
].join(' ');

const errorTypes = new Set<CommsEventType>(['comms.failed', 'comms.dropped']);

function bodyExample(type: CommsEventType) {
  const nil = '00000000-0000-0000-0000-000000000000';
  const test = type === 'comms.test';
  const status = type.slice('comms.'.length);
  return {
    id: ex.webhookId,
    type,
    createdAt: '2026-11-21T10:05:01.000Z',
    data: {
      attendeeId: test ? nil : ex.guestId,
      templateId: test ? nil : ex.templateId,
      attendeeInvitationId: test ? nil : ex.invitationId,
      status,
      error: errorTypes.has(type) ? (type === 'comms.failed' ? 'provider_rejected: 550 mailbox unavailable' : 'invalid address') : null,
      correlationId: 'crm-batch-42',
    },
  };
}

const header = (description: string, example: string) => z.string().openapi({ description, example });

for (const type of commsEventTypes) {
  const body = z
    .object({
      id: z.string().uuid().openapi({ description: 'The webhook id: equals X-Service-Webhook-Id, the same on every retry and redelivery' }),
      type: z.literal(type),
      createdAt: z.string().openapi({ format: 'date-time', description: 'When the event happened (UTC, milliseconds)' }),
      data: z.object({
        // Spec, Body shape: the guest GUID, the template GUID, the server-side tracking GUID.
        attendeeId: z.string().openapi({ format: 'uuid', description: 'The guest id' }),
        templateId: z.string().openapi({ format: 'uuid', description: 'The template id' }),
        attendeeInvitationId: z.string().openapi({ format: 'uuid', description: 'The invitation email’s tracking id' }),
        status: z.literal(type.slice('comms.'.length)),
        error: errorTypes.has(type) ? z.string() : z.null(),
        correlationId: z.string().optional().openapi({ description: 'The caller’s correlationId, when one was given' }),
      }),
    })
    .openapi({ description: 'Ignore unknown fields: new ones may be added.' });
  registry.registerWebhook({
    method: 'post',
    path: type,
    // A name a generator can use as a method or type name (`commsSpamReportedWebhook`), unlike `webhook-comms.spam_reported`.
    operationId: webhookOperationId(type),
    // The receiver authenticates a delivery by its signature (X-Service-Signature), not by a security scheme.
    security: [],
    summary: `${type}: ${triggers[type]}`,
    description: `${triggers[type]} POSTed to the account's webhook URL. ${signatureScheme}`,
    tags: ['Webhooks'],
    request: {
      headers: z.object({
        'X-Service-Signature': header('t=<unix seconds>,v1=<HMAC-SHA256 hex>', 't=1795255200,v1=5f2b9c0e7a1d4b6f8e3c2a19d07b5e4f6a8c1d3e5f7a9b0c2d4e6f8a1b3c5d7e'),
        'X-Service-Webhook-Id': header('The webhook id (body `id`), identical across retries', ex.webhookId),
        'X-Service-Event': header('The event type (body `type`)', type),
        'Content-Type': header('Always application/json', 'application/json'),
        'User-Agent': header('The sender', 'checkin-service-webhooks/1'),
      }),
      body: { required: true, content: { 'application/json': { schema: body, example: bodyExample(type) } } },
    },
    responses: {
      200: { description: 'Any 2xx: delivered' },
      401: { description: 'The signature did not verify: the event is not retried (unless the secret was rotated while the request was on its way: then it is, signed with the new one)' },
      503: { description: '408, 429 and 5xx (and timeouts) are retried with backoff' },
    },
  });
}

/** `comms.spam_reported` → `commsSpamReportedWebhook`. */
export function webhookOperationId(type: string): string {
  return type.split(/[^A-Za-z0-9]+/).map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('') + 'Webhook';
}
