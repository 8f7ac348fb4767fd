import { Router } from 'express';
import type { Services } from '../../commands/services.js';
import {
  configureWebhook,
  deleteWebhook,
  getDelivery,
  getWebhook,
  listCommsEvents,
  listDeliveries,
  redeliver,
  requestWebhookTest,
  rotateWebhookSecret,
  type WebhookSettings,
} from '../../commands/webhooks.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import { doNotStoreResponse } from '../middleware/idempotency.js';
import {
  CommsEventsQuery,
  CommsEventsResponse,
  DeliveryListQuery,
  DeliveryListResponse,
  DeliveryParams,
  DeliveryResponse,
  WebhookBody,
  WebhookDeletedResponse,
  WebhookResponse,
  WebhookSecretResponse,
  WebhookTestBody,
  WebhookTestResponse,
} from '../schemas/webhook.js';

const base = '/comms/v1/api/comms';
const tags = ['Webhooks'];

/** Spec: Comms (webhook rows and rules 2-4), Events; docs/webhooks.md (delivery log and redelivery). */
export function webhooksRouter(services: Services, settings: WebhookSettings): Router {
  const router = Router();
  const context = (res: Parameters<typeof commandContext>[0]) => commandContext(res, services.clock);

  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/webhook`,
      summary: 'Configure the webhook URL; the first call also returns the signing secret (once), later calls change the URL only',
      tags,
      body: WebhookBody,
      response: WebhookSecretResponse,
      errors: [403],
    },
    ({ body, res }) => {
      doNotStoreResponse(res);
      return configureWebhook(services, settings, context(res), body);
    },
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/webhook/rotate`,
      summary: 'Generate a new signing secret (returned once); the old one stops signing at once',
      tags,
      response: WebhookSecretResponse,
      errors: [403, 404],
    },
    ({ res }) => {
      doNotStoreResponse(res);
      return rotateWebhookSecret(services, settings, context(res));
    },
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: `${base}/webhook`,
      summary: 'Read the configured webhook (never the secret)',
      tags,
      response: WebhookResponse,
      errors: [403, 404],
    },
    ({ res }) => getWebhook(services, principalOf(res).tenantId),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/webhook/delete`,
      summary: 'Remove the webhook configuration; deliveries still pending stop',
      tags,
      response: WebhookDeletedResponse,
      errors: [403, 404],
    },
    ({ res }) => deleteWebhook(services, context(res)),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/webhook/test`,
      summary: 'Send a synthetic comms.test event through the full signing and delivery path',
      tags,
      body: WebhookTestBody,
      response: WebhookTestResponse,
      errors: [403, 404],
      links: {
        GetDelivery: { operationId: 'getCommsV1ApiCommsWebhookDeliveriesId', parameters: { id: '$response.body#/webhookId' } },
      },
    },
    ({ body, res }) => requestWebhookTest(services, context(res), body),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: `${base}/webhook/deliveries`,
      summary: 'The delivery log, newest first, with every attempt (filter by status, type and creation time; cursor paged)',
      tags,
      query: DeliveryListQuery,
      response: DeliveryListResponse,
      errors: [403],
      links: {
        GetDelivery: { operationId: 'getCommsV1ApiCommsWebhookDeliveriesId', parameters: { id: '$response.body#/items/0/id' } },
        Redeliver: { operationId: 'postCommsV1ApiCommsWebhookDeliveriesIdRedeliver', parameters: { id: '$response.body#/items/0/id' } },
      },
    },
    ({ query, res }) => listDeliveries(services, principalOf(res).tenantId, query),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: `${base}/webhook/deliveries/:id`,
      summary: 'One delivery and its attempts',
      tags,
      params: DeliveryParams,
      response: DeliveryResponse,
      errors: [403, 404],
    },
    ({ params, res }) => getDelivery(services, principalOf(res).tenantId, params.id),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/webhook/deliveries/:id/redeliver`,
      summary: 'Send a delivery again: same webhook id and body, fresh timestamp and signature, a fresh set of attempts',
      tags,
      params: DeliveryParams,
      response: DeliveryResponse,
      errors: [403, 404],
    },
    ({ params, res }) => redeliver(services, context(res), params.id, settings),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: `${base}/events`,
      summary: 'The account’s comms events in order, from `since`: for reconciliation after the receiver was down',
      tags,
      query: CommsEventsQuery,
      response: CommsEventsResponse,
      errors: [403],
    },
    ({ query, res }) => listCommsEvents(services, principalOf(res).tenantId, query),
  );
  return router;
}
