import { Router } from 'express';
import { getEvent, listEvents, saveEvent, withIanaTimeZone } from '../../commands/events.js';
import { PageQuery, pageOf } from '../schemas/common.js';
import type { Services } from '../../commands/services.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import { eventTimeZone, fields } from '../time-zone.js';
import { EventBody, EventResponse, eventFields, IdParams } from '../schemas/event.js';
import { withEveryField } from '../../shared/every-field.js';

export function eventsRouter(services: Services): Router {
  const router = Router();
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/event',
      summary: 'Create an event, or update it when the body names an existing id',
      tags: ['Events'],
      body: EventBody,
      response: EventResponse,
      errors: [404],
      links: {
        GetEvent: { operationId: 'getCheckinV1ApiEventId', parameters: { id: '$response.body#/id' } },
        EventStats: { operationId: 'getCheckinV1ApiEventIdStats', parameters: { id: '$response.body#/id' } },
        EventScans: { operationId: 'getCheckinV1ApiEventIdScans', parameters: { id: '$response.body#/id' } },
        TeamStats: { operationId: 'getCheckinV1ApiTeamEventId', parameters: { id: '$response.body#/id' } },
        ListGuests: { operationId: 'getCheckinV1ApiGuestsEventId', parameters: { eventId: '$response.body#/id' } },
        GuestsByInfo: { operationId: 'getCheckinV1ApiGuestsEventIdByinfo', parameters: { eventId: '$response.body#/id' } },
        SaveGuests: { operationId: 'postCheckinV1ApiGuestsEventId', parameters: { eventId: '$response.body#/id' } },
        UpsertGuests: { operationId: 'putCheckinV1ApiGuestsEventIdUpsert', parameters: { eventId: '$response.body#/id' } },
        CheckIn: { operationId: 'postCheckinV1ApiGuestsEventIdCheckin', parameters: { eventId: '$response.body#/id' } },
        Block: { operationId: 'postCheckinV1ApiGuestsEventIdBlock', parameters: { eventId: '$response.body#/id' } },
      },
      timeZone: eventTimeZone(services, ({ body }) => ({ timeZoneId: fields(body).timeZoneId, eventId: fields(body).id })),
    },
    async ({ body, res }) => {
      const event = await saveEvent(services, commandContext(res, services.clock), body);
      return withEveryField((await withIanaTimeZone(services, principalOf(res).tenantId, [event]))[0]!, eventFields);
    },
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/event/:id',
      summary: 'Read one event',
      tags: ['Events'],
      roles: ['client', 'team_member'],
      params: IdParams,
      response: EventResponse,
      errors: [404],
    },
    async ({ params, res }) => {
      const { tenantId } = principalOf(res);
      return withEveryField((await withIanaTimeZone(services, tenantId, [await getEvent(services, tenantId, params.id)]))[0]!, eventFields);
    },
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/events',
      summary: 'The client’s events, by start time (cursor paged)',
      tags: ['Events'],
      query: PageQuery,
      response: pageOf(EventResponse),
      roles: ['client', 'team_member'],
    },
    async ({ query, res }) => {
      const { tenantId } = principalOf(res);
      const page = await listEvents(services, tenantId, query);
      return { ...page, items: (await withIanaTimeZone(services, tenantId, page.items)).map((event) => withEveryField(event, eventFields)) };
    },
  );
  return router;
}
