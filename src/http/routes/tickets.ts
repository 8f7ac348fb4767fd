import { Router } from 'express';
import type { Services } from '../../commands/services.js';
import { getTicket, getTicketKeys, listTickets, reissueTicket, revokeTicket, rotateTicketKeys } from '../../commands/tickets.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import { eventTimeZone } from '../time-zone.js';
import { IdParams } from '../schemas/event.js';
import { GuestIdParams, GuestLookupQuery } from '../schemas/guest.js';
import { pageOf } from '../schemas/common.js';
import { TicketKeysResponse, TicketResponse, TicketSyncItem, TicketSyncQuery } from '../schemas/ticket.js';

/** Issue 16: signed tickets. Reads are open to door staff (offline scanners); changes are the client's. */
export function ticketsRouter(services: Services): Router {
  const router = Router();
  const tags = ['Tickets'];
  const ctx = (res: Parameters<typeof commandContext>[0]) => commandContext(res, services.clock);
  const door = ['client', 'team_member'] as const;

  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/event/:id/ticket-keys',
      summary: 'The public keys that verify the event’s signed tickets (for offline scanners; docs/tickets.md)',
      tags,
      params: IdParams,
      response: TicketKeysResponse,
      roles: [...door],
      errors: [404],
    },
    ({ params, res }) => getTicketKeys(services, principalOf(res).tenantId, params.id),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/event/:id/tickets',
      summary: 'Every guest’s current code, oldest change first; `changedSince` for an offline scanner’s sync of revoked and reissued tickets',
      tags,
      params: IdParams,
      query: TicketSyncQuery,
      response: pageOf(TicketSyncItem),
      roles: [...door],
      errors: [404],
      timeZone: eventTimeZone(services, ({ params }) => ({ eventId: params.id })),
    },
    ({ params, query, res }) => listTickets(services, principalOf(res).tenantId, params.id, query),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/event/:id/ticket-keys/rotate',
      summary: 'Rotate the event’s ticket key: a new key signs from now on; tickets already issued keep verifying until the event ends',
      tags,
      params: IdParams,
      response: TicketKeysResponse,
      errors: [404],
    },
    ({ params, res }) => rotateTicketKeys(services, ctx(res), params.id),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/guest/:id/ticket',
      summary: 'The code a guest shows at the door: its barcode, or the signed ticket the service issued',
      tags,
      params: GuestIdParams,
      query: GuestLookupQuery,
      response: TicketResponse,
      roles: [...door],
      errors: [404, 409],
    },
    ({ params, query, res }) => getTicket(services, principalOf(res).tenantId, params.id, query.eventId),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guest/:id/ticket/reissue',
      summary: 'Issue a new signed ticket; the previous one is rejected at the door with reason `revoked` (audited in the guest’s history)',
      tags,
      params: GuestIdParams,
      query: GuestLookupQuery,
      response: TicketResponse,
      errors: [404, 409],
    },
    ({ params, query, res }) => reissueTicket(services, ctx(res), params.id, query.eventId),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guest/:id/ticket/revoke',
      summary: 'Revoke the guest’s signed ticket without a new one: scans answer `revoked` (audited in the guest’s history)',
      tags,
      params: GuestIdParams,
      query: GuestLookupQuery,
      status: 204,
      errors: [404, 409],
    },
    async ({ params, query, res }) => {
      await revokeTicket(services, ctx(res), params.id, query.eventId);
    },
  );
  return router;
}
