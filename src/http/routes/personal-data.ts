import { Router } from 'express';
import { eraseGuest, eraseGuests, personalDataOf, type PersonalDataSettings } from '../../commands/personal-data.js';
import type { Services } from '../../commands/services.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import { EventIdParams, GuestIdParams, GuestLookupQuery } from '../schemas/guest.js';
import { EraseBatchBody, EraseBody, ErasureBatchResponse, ErasureResponse, PersonalDataResponse } from '../schemas/personal-data.js';

/** Issue 14: erasure and access of a guest's personal data (docs/personal-data.md). Clients only. */
export function personalDataRouter(services: Services, settings: PersonalDataSettings): Router {
  const router = Router();
  const tags = ['Personal data'];
  const ctx = (res: Parameters<typeof commandContext>[0]) => commandContext(res, services.clock);

  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guest/:id/erase',
      summary: "Erase a guest's personal data (crypto-shredding); ids, times, scans and counts are kept. Idempotent",
      tags,
      params: GuestIdParams,
      body: EraseBody,
      response: ErasureResponse,
      errors: [404, 409],
    },
    ({ params, body, res }) => eraseGuest(services, settings, ctx(res), params.id, body),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guests/:eventId/erase',
      summary: "Erase the personal data of up to 200 guests of an event (ids) or of all of them (all: true)",
      tags,
      params: EventIdParams,
      body: EraseBatchBody,
      response: ErasureBatchResponse,
      errors: [404],
    },
    ({ params, body, res }) => eraseGuests(services, settings, ctx(res), params.eventId, body),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/guest/:id/personal-data',
      summary: 'Everything held about a guest (GDPR art. 15): current data, decrypted history, invitation emails and outcomes, scans',
      tags,
      params: GuestIdParams,
      query: GuestLookupQuery,
      response: PersonalDataResponse,
      errors: [404, 409],
    },
    ({ params, query, res }) => personalDataOf(services, principalOf(res).tenantId, params.id, query.eventId),
  );
  return router;
}
