import { Router } from 'express';
import type { DomainAuthenticator } from '../../adapters/domains/port.js';
import type { Services } from '../../commands/services.js';
import { configureSendingDomain, getSendingDomain, switchCustomDomain, verifySendingDomain } from '../../commands/sending-domain.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import { DomainBody, DomainResponse } from '../schemas/comms.js';

const base = '/comms/v1/api/comms/domain';
const tags = ['Sending domain'];

/** Spec: Domain authentication record; the domain rows of States and transitions; Comms rule 5. */
export function sendingDomainRouter(services: Services, authenticator: DomainAuthenticator): Router {
  const router = Router();
  const context = (res: Parameters<typeof commandContext>[0]) => commandContext(res, services.clock);

  defineRoute(
    router,
    { method: 'get', path: base, summary: 'Read the custom sending domain and its DNS records', tags, response: DomainResponse, errors: [403, 404] },
    ({ res }) => getSendingDomain(services, principalOf(res).tenantId),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: base,
      summary: 'Configure the custom sending domain at the delivery provider; returns the DNS records to publish',
      tags,
      body: DomainBody,
      response: DomainResponse,
      errors: [400, 403, 409, 422, 503],
    },
    ({ body, res }) => configureSendingDomain(services, authenticator, context(res), body),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/verify`,
      summary: 'Check the DNS records now; the first successful verify enables the custom domain',
      tags,
      response: DomainResponse,
      errors: [403, 404, 409, 422, 503],
    },
    ({ res }) => verifySendingDomain(services, authenticator, context(res)),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/activate`,
      summary: 'Route sends through the custom domain again (needs a successful verify before; records are not re-verified)',
      tags,
      response: DomainResponse,
      errors: [403, 409],
    },
    ({ res }) => switchCustomDomain(services, context(res), true),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/deactivate`,
      summary: 'Send from the default address until reactivated; the DNS authentication and records are kept',
      tags,
      response: DomainResponse,
      errors: [403, 404],
    },
    ({ res }) => switchCustomDomain(services, context(res), false),
  );
  return router;
}
