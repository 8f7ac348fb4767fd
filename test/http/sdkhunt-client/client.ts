/**
 * A client program as an integrator writes it: openapi-fetch typed by what openapi-typescript generates from the
 * served /openapi.json (`./api.js` is generated next to a copy of this file by test/http/sdkhunt.test.ts, then
 * type-checked with tsc and run against the service). Excluded from tsconfig.json: `./api.js` exists only there.
 */
import createClient from 'openapi-fetch';
import type { components, operations, paths } from './api.js';

type Schemas = components['schemas'];

// The document types each body, so these are compile errors (an unused @ts-expect-error fails tsc):
// @ts-expect-error commsApiEnabled is a boolean
export const wrongAccess: Schemas['AdminAccountAccess'] = { commsApiEnabled: 'yes' };
// @ts-expect-error barcodes are texts
export const wrongBlock: Schemas['BulkBlock'] = { barcodes: [42] };
// @ts-expect-error ids are texts
export const wrongErase: Schemas['EraseGuests'] = { reason: 'x', ids: [1] };

/** A webhook receiver typed by the document's webhook operation. */
export type DeliveredEvent = operations['commsDeliveredWebhook']['requestBody']['content']['application/json'];
export const statusOf = (event: DeliveredEvent): 'delivered' => event.data.status;

export interface Credentials {
  token: string;
  subscriptionKey: string;
}

function must<T>(label: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) throw new Error(`${label}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data;
}

/** One round trip through each area; returns what it read, for the test to look at. */
export async function roundTrip(baseUrl: string, client: Credentials, email: string, clientId: string) {
  const api = createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${client.token}`, 'Ocp-Apim-Subscription-Key': client.subscriptionKey },
  });

  const event: Schemas['EventResponse'] = must('event', await api.POST('/checkin/v1/api/event', {
    body: { title: 'SDK gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-13T02:00:00Z' },
  }));
  const template: Schemas['CommsTemplateResponse'] = must('template', await api.POST('/comms/v1/api/comms/template', {
    body: { eventId: event.id, name: 'Invite', html: '<p>Hello {{firstName}}</p>', subject: 'Welcome' },
  }));
  const templateRead = must('template read', await api.GET('/comms/v1/api/comms/template/{id}', { params: { path: { id: template.id } } }));

  const guest: Schemas['GuestResponse'] = must('guest', await api.POST('/checkin/v1/api/guest', {
    body: { eventId: event.id, firstName: 'Ada', email: 'ada@example.com', barcode: 'SDK-1', additionalInfo: 'vip', plusOnes: 1 },
  }));
  const upsert = await api.PUT('/checkin/v1/api/guests/{eventId}/upsert', {
    params: { path: { eventId: event.id }, query: { removeObsoleteTags: true } },
    body: [{ id: guest.id, tags: 'press' }],
  });
  const byInfo = must('byinfo', await api.GET('/checkin/v1/api/guests/{eventId}/byinfo', {
    params: { path: { eventId: event.id }, query: { additionalInfo: 'vip' } },
  }));

  const scan: Schemas['ScanResult'] = must('check-in', await api.POST('/checkin/v1/api/guests/{eventId}/checkin', {
    params: { path: { eventId: event.id } },
    body: { barcode: 'SDK-1', plusOnes: 1, gate: 'North' },
  }));
  const admittedAt: Date | null = scan.guest?.admitted ? new Date(scan.guest.admitted) : null;
  const stats = must('stats', await api.GET('/checkin/v1/api/event/{id}/stats', { params: { path: { id: event.id } } }));

  const member = must('team member', await api.POST('/checkin/v1/api/teammember', {
    body: { userName: 'sdk-door-1', password: 'a door password 123', email: 'door@example.com' },
  }));
  const team = must('team stats', await api.GET('/checkin/v1/api/team/event/{id}', { params: { path: { id: event.id } } }));

  const webhook = must('webhook', await api.POST('/comms/v1/api/comms/webhook', { body: { url: 'https://hooks.example.com/sdk' } }));
  const webhookRead = must('webhook read', await api.GET('/comms/v1/api/comms/webhook'));

  const user = must('user', await api.GET('/users/v1/api/users/email', { params: { query: { email } } }));
  const userUpdate = await api.PUT('/users/v1/api/user', { body: { id: clientId, companyName: 'SDK Ltd' } });

  // One 200 with three media types (JSON, or the file when Accept asks for it): the generated type is their union.
  const exported = must('export', await api.POST('/checkin/v1/api/event/export', {
    params: { query: { type: 'CSV' } },
    body: { id: event.id, title: event.title, startTime: event.startTime, endTime: event.endTime },
  }));
  if (typeof exported === 'string') throw new Error('export: a file, although Accept did not ask for one');
  const csv = must('export file', await api.GET('/checkin/v1/api/event/export/{exportId}', {
    params: { path: { exportId: exported.exportId } },
    headers: { Accept: 'text/csv' },
    parseAs: 'text',
  }));

  return {
    event, template, templateRead, guest, upsertStatus: upsert.response.status, byInfo, scan, admittedAt, stats, member, team,
    webhook, webhookRead, user, userUpdateStatus: userUpdate.response.status, exported, csv,
  };
}
