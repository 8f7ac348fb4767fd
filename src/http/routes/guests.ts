import { Router } from 'express';
import { z } from 'zod';
import { scan, setBlocked, undoCheckIn } from '../../commands/door.js';
import { guestHistory } from '../../commands/guest-history.js';
import { eventStats, guestsByInfo, guestsByInfoPage, listGuests, listScans, teamStats } from '../../commands/guest-queries.js';
import { getGuest, saveGuests } from '../../commands/guests.js';
import type { Services } from '../../commands/services.js';
import { commandContext, principalOf } from '../context.js';
import { HttpError } from '../errors.js';
import { sendJsonArray } from '../json-array.js';
import { defineRoute } from '../route.js';
import { eventTimeZone, fields, guestHistoryTimeZone } from '../time-zone.js';
import { pageOf } from '../schemas/common.js';
import { IdParams } from '../schemas/event.js';
import {
  BlockBody,
  ByInfoQuery,
  EventIdParams,
  EventStatsResponse,
  GuestBatch,
  GuestCreateBody,
  GuestHistoryResponse,
  GuestIdParams,
  GuestListQuery,
  GuestLookupQuery,
  GuestResponse,
  HistoryQuery,
  ScanBody,
  ScanListQuery,
  ScanPage,
  ScanResponse,
  TeamStatsQuery,
  TeamStatsResponse,
  UndoBody,
  UndoResponse,
  UpsertQuery,
} from '../schemas/guest.js';

const door = ['client', 'team_member'] as const;

/** A created guest's id and event lead to the routes that read and scan it. */
const guestLinks = {
  GetGuest: { operationId: 'getCheckinV1ApiGuestId', parameters: { id: '$response.body#/id' } },
  GetGuestHistory: { operationId: 'getCheckinV1ApiGuestIdHistory', parameters: { id: '$response.body#/id' } },
  ListGuests: { operationId: 'getCheckinV1ApiGuestsEventId', parameters: { eventId: '$response.body#/eventId' } },
  CheckIn: {
    operationId: 'postCheckinV1ApiGuestsEventIdCheckin',
    parameters: { eventId: '$response.body#/eventId' },
    requestBody: { guestId: '$response.body#/id' },
  },
};

export function guestsRouter(services: Services): Router {
  const router = Router();
  const tags = ['Guests'];
  const ctx = (res: Parameters<typeof commandContext>[0]) => commandContext(res, services.clock);
  // Date-times without an offset are read in the zone of the event the request names.
  const timeZone = eventTimeZone(services, ({ params, body, query }) => ({
    eventId: params.eventId ?? params.id ?? fields(body).eventId ?? fields(query).eventId,
  }));

  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guest',
      summary: 'Create a guest',
      tags,
      body: GuestCreateBody,
      response: GuestResponse,
      errors: [404, 409],
      links: guestLinks,
      timeZone,
    },
    async ({ body, res }) => {
      if (!body.eventId) {
        throw new HttpError(400, 'validation_error', 'eventId is required', [{ path: 'eventId', message: 'required' }]);
      }
      const [guest] = await saveGuests(services, ctx(res), body.eventId, [body], { mode: 'create' });
      return guest;
    },
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/guest/:id',
      summary: 'Read a guest, by id or customId',
      tags,
      params: GuestIdParams,
      query: GuestLookupQuery,
      response: GuestResponse,
      roles: [...door],
      errors: [404, 409],
    },
    ({ params, query, res }) => getGuest(services, principalOf(res).tenantId, params.id, query.eventId),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/guest/:id/history',
      summary: 'Audit: every event of a guest and of its invitation emails (`stream` says whose), in order, a page at a time (limit, default 500; cursor: the previous page’s nextCursor); with asOf, the guest as it was then',
      tags,
      params: GuestIdParams,
      query: HistoryQuery,
      response: GuestHistoryResponse,
      errors: [403, 404, 409],
      timeZone: guestHistoryTimeZone(services),
    },
    ({ params, query, res }) => guestHistory(services, principalOf(res).tenantId, params.id, query),
  );
  defineRoute(
    router,
    {
      method: 'put',
      path: '/checkin/v1/api/guests/:eventId/upsert',
      summary: 'Upsert up to 200 guests (match by id, then customId); admission and block are never changed',
      tags,
      params: EventIdParams,
      query: UpsertQuery,
      body: GuestBatch,
      status: 204,
      errors: [404, 409],
      timeZone,
    },
    async ({ params, query, body, res }) => {
      // 204: the guests' views are not made (an import's 200 per batch were made only to be dropped).
      await saveGuests(services, ctx(res), params.eventId, body, { mode: 'upsert', removeObsoleteTags: query.removeObsoleteTags, views: false });
    },
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guests/:eventId',
      summary: 'Create or upsert up to 200 guests; returns the resulting guests',
      tags,
      params: EventIdParams,
      query: UpsertQuery,
      body: GuestBatch,
      response: z.array(GuestResponse),
      errors: [404, 409],
      timeZone,
    },
    ({ params, query, body, res }) =>
      saveGuests(services, ctx(res), params.eventId, body, { mode: 'upsert', removeObsoleteTags: query.removeObsoleteTags }),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/guests/:eventId',
      summary: 'Guests of an event: by tag, state or text; `changedSince` for offline scanners',
      tags,
      params: EventIdParams,
      query: GuestListQuery,
      response: pageOf(GuestResponse),
      roles: [...door],
      errors: [404],
      timeZone,
    },
    ({ params, query, res }) => listGuests(services, principalOf(res).tenantId, params.eventId, query),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/guests/:eventId/byinfo',
      summary:
        'Every guest whose additionalInfo contains the text (case-insensitive), by last then first name. With limit or cursor: one page, the next page’s cursor in X-Next-Cursor',
      tags,
      params: EventIdParams,
      query: ByInfoQuery,
      response: z.array(GuestResponse),
      roles: [...door],
      errors: [404],
    },
    async ({ params, query, res }) => {
      const clientId = principalOf(res).tenantId;
      if (query.limit === undefined && query.cursor === undefined) {
        const matches = await guestsByInfo(services, clientId, params.eventId, query.additionalInfo);
        return sendJsonArray(res, matches.batches, matches.json);
      }
      const page = await guestsByInfoPage(services, clientId, params.eventId, { ...query, limit: query.limit ?? 100 });
      if (page.nextCursor) res.set('X-Next-Cursor', page.nextCursor);
      return page.items;
    },
  );

  const doorTags = ['Door'];
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guests/:eventId/checkin',
      summary: 'Check a guest in (by id, barcode or customId); rejections are answered and recorded; `force` needs the client or a team member with canForce (else 403)',
      description:
        'Always 200 for a scan that was judged: `result` admitted or rejected with a `reason`. `at` (an offline scanner’s time) ' +
        'may be at most 5 minutes ahead of the server (else 400 on `at`). `nonce` makes a retry return the first result.',
      tags: doorTags,
      params: EventIdParams,
      body: ScanBody,
      response: ScanResponse,
      roles: [...door],
      errors: [403, 404],
      timeZone,
      uncompressed: true,
    },
    ({ params, body, res }) => scan(services, ctx(res), params.eventId, body, 'in'),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guests/:eventId/checkout',
      summary: 'Check a guest (and party) out; they may come in again',
      description:
        'Always 200 for a scan that was judged: `result` discharged, or rejected `already_discharged` (a second exit scan of a visit ' +
        'already checked out). A check-out synced before the check-in it follows (offline devices) is recorded and counted.',
      tags: doorTags,
      params: EventIdParams,
      body: ScanBody,
      response: ScanResponse,
      roles: [...door],
      errors: [404, 409],
      timeZone,
      uncompressed: true,
    },
    ({ params, body, res }) => scan(services, ctx(res), params.eventId, body, 'out'),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/guests/:eventId/checkin/undo',
      summary: 'Annul a check-in by scan id or nonce, or the last check-in of a guest (guestId or customId), within 5 minutes',
      tags: doorTags,
      params: EventIdParams,
      body: UndoBody,
      response: UndoResponse,
      roles: [...door],
      errors: [404, 409],
      uncompressed: true,
    },
    ({ params, body, res }) => undoCheckIn(services, ctx(res), params.eventId, body),
  );
  for (const blocked of [true, false]) {
    defineRoute(
      router,
      {
        method: 'post',
        path: `/checkin/v1/api/guests/:eventId/${blocked ? 'block' : 'unblock'}`,
        summary: `${blocked ? 'Block' : 'Unblock'} up to 200 guests by id, customId or barcode; all or nothing`,
        description: 'An id, customId or barcode that no guest of the event has (or another client\'s guest) is 404, each named in `errors`, and nothing changes.',
        tags: doorTags,
        params: EventIdParams,
        body: BlockBody,
        response: z.array(GuestResponse),
        errors: [404],
      },
      ({ params, body, res }) => setBlocked(services, ctx(res), params.eventId, body, blocked),
    );
  }
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/event/:id/scans',
      summary: 'Scans at the door (`result=rejected` for rejected ones, unknown barcodes included), newest first',
      tags: doorTags,
      params: IdParams,
      query: ScanListQuery,
      response: ScanPage,
      errors: [403, 404],
    },
    ({ params, query, res }) => listScans(services, principalOf(res).tenantId, params.id, query),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/event/:id/stats',
      summary: 'Invited, admitted, inside now, plus ones, blocked, rejections by reason, admissions by gate and device',
      tags: doorTags,
      params: IdParams,
      response: EventStatsResponse,
      errors: [403, 404],
    },
    ({ params, res }) => eventStats(services, principalOf(res).tenantId, params.id),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/team/event/:id',
      summary: 'Per team member: people checked in and out, and check-in activity in time buckets',
      tags: ['Team members'],
      params: IdParams,
      query: TeamStatsQuery,
      response: TeamStatsResponse,
      roles: [...door],
      errors: [404],
    },
    ({ params, query, res }) => teamStats(services, principalOf(res).tenantId, params.id, query.bucket),
  );
  return router;
}
