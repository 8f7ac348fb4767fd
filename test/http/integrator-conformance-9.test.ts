import { generateKeyPairSync } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOutbox } from '../support/mail-readers.js';
import { clientToken, createClient, newEvent, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';

/**
 * The interface spec read as an integrator reads it, ninth pass: Comms and Users (templates,
 * sends, webhooks, sending domain, accounts, password change, subscription keys). The places
 * where the service still differed from the spec and was mended.
 */

const api = '/comms/v1/api/comms';
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    WEBHOOK_ALLOW_INSECURE: 'true',
    SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  });
});
afterAll(async () => {
  await service.close();
});

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

async function templateOf(client: Client, eventId: string): Promise<string> {
  const reply = await client.call('POST', `${api}/template`, { eventId, name: 'Invite', html: '<p>Hello {{firstName}}</p>' });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

async function guestOf(client: Client, eventId: string, fields: Record<string, unknown>): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, ...fields });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

/** The delivery provider reports `event` for the guest's sent invitation (SendGrid's signed Event Webhook). */
async function providerReports(client: Client, guestId: string, email: string, event: string): Promise<void> {
  const invitationId = await eventually(async () => {
    const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${guestId}`)).body.items;
    return item?.status === 'sent' ? (item.attendeeInvitationId as string) : undefined;
  }, 30_000, `the invitation of ${guestId} sent`);
  const reply = await postSendGridEvents(service.url, privateKey, [
    { email, event, timestamp: Math.floor(Date.now() / 1000), sg_event_id: `${event}-${guestId}`, attendeeInvitationId: invitationId, reason: '550 5.1.1 mailbox unknown' },
  ]);
  expect(reply.status).toBe(200);
}

describe('POST /send: every refusal names each guest it is about by its place in attendeeIds, as block, unblock and erase do', () => {
  it('a guest not of the template’s event is 404 with errors naming each attendeeIds.<i>, and nothing is sent', async () => {
    const client = await commsClient();
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const ada = await guestOf(client, eventId, { firstName: 'Ada', email: 'ada@example.com' });
    const elsewhere = await guestOf(client, await newEvent(client), { firstName: 'Eve', email: 'eve@example.com' });

    const reply = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [ada, 'crm-unknown', elsewhere, 'crm-unknown'] });
    expect(reply.status).toBe(404);
    expect(reply.body).toMatchObject({ code: 'not_found' });
    expect(reply.body.errors).toEqual([
      { path: 'attendeeIds.1', message: expect.any(String) },
      { path: 'attendeeIds.2', message: expect.any(String) },
      { path: 'attendeeIds.3', message: expect.any(String) },
    ]);
    expect((await client.call('GET', `${api}/invitations?attendeeId=${ada}`)).body.items).toEqual([]);
  });

  it('a guest without an email is 400 on its own index, also when a guest before it is named twice or by id and customId', async () => {
    const client = await commsClient();
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const ada = await guestOf(client, eventId, { firstName: 'Ada', email: 'ada@example.com', customId: 'crm-ada' });
    const bob = await guestOf(client, eventId, { firstName: 'Bob' });

    const reply = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [ada, ada, 'crm-ada', bob] });
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: 'attendeeIds.3', message: expect.stringContaining('no email') }]);
  });

  it('a recipient the provider reported bounced is 422 previous_send_permanently_failed on its own index', async () => {
    const client = await commsClient();
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const email = `bounced-${Date.now()}@example.com`;
    const gil = await guestOf(client, eventId, { firstName: 'Gil', email, customId: 'crm-gil', commsTemplateId: templateId });
    await providerReports(client, gil, email, 'bounce');
    const ada = await guestOf(client, eventId, { firstName: 'Ada', email: 'ada@example.com', customId: 'crm-ada' });

    const refused = await eventually(async () => {
      const reply = await client.call('POST', `${api}/send`, { templateId, attendeeIds: ['crm-ada', ada, gil, 'crm-gil'] });
      return reply.status === 422 ? reply : undefined;
    }, 30_000, 'the bounce to be recorded');
    expect(refused.body).toMatchObject({ code: 'previous_send_permanently_failed' });
    expect(refused.body.errors).toEqual([
      { path: 'attendeeIds.2', message: expect.stringContaining(email) },
      { path: 'attendeeIds.3', message: expect.stringContaining(email) },
    ]);
  });
});

describe('User.timeZoneId, "time zone of the client": an invitation shows the event’s times on the client’s clocks when the event names no zone', () => {
  /** The html of the invitation mailed to `email`, from a template that shows the event's times. */
  async function mailedTimes(client: Client, eventFields: Record<string, unknown>, email: string): Promise<string> {
    const eventId = await newEvent(client, { startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z', ...eventFields });
    const template = await client.call('POST', `${api}/template`, { eventId, name: 'Times', html: '<p>{{eventStart}} to {{eventEnd}} ({{eventTimeZone}})</p>' });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    await guestOf(client, eventId, { firstName: 'Tim', email, commsTemplateId: template.body.id });
    const mail = await eventually(async () => (await readOutbox(path.join(service.dataDir, 'outbox'))).find((m) => m.to.email === email), 30_000, `the mail to ${email}`);
    return mail.html;
  }

  it('an event without a timeZoneId is shown in the client’s zone (as its export is), not in UTC', async () => {
    const client = await commsClient();
    expect((await client.call('PUT', '/users/v1/api/user', { id: client.id, timeZoneId: 'Europe/Amsterdam' })).status).toBe(204);
    const html = await mailedTimes(client, {}, `tz-account-${Date.now()}@example.com`);
    expect(html).toContain('Saturday, 12 December 2026 at 19:00 to Sunday, 13 December 2026 at 00:00 (Europe/Amsterdam)');
  });

  it('an event timeZoneId that names no zone is skipped for the client’s, and {{eventTimeZone}} names the zone the times are in', async () => {
    const client = await commsClient();
    expect((await client.call('PUT', '/users/v1/api/user', { id: client.id, timeZoneId: 'W. Europe Standard Time' })).status).toBe(204);
    const html = await mailedTimes(client, { timeZoneId: '(UTC+01:00) Amsterdam, Berlin' }, `tz-skipped-${Date.now()}@example.com`);
    expect(html).toContain('at 19:00');
    expect(html).toContain('(Europe/Berlin)');
  });

  it('the event’s own zone still comes first, and a client without a zone gets UTC, said so', async () => {
    const client = await commsClient();
    await client.call('PUT', '/users/v1/api/user', { id: client.id, timeZoneId: 'Europe/Amsterdam' });
    expect(await mailedTimes(client, { timeZoneId: 'America/New_York' }, `tz-event-${Date.now()}@example.com`)).toContain('at 13:00');
    const plain = await commsClient();
    expect(await mailedTimes(plain, {}, `tz-none-${Date.now()}@example.com`)).toContain('Saturday, 12 December 2026 at 18:00 to Saturday, 12 December 2026 at 23:00 (UTC)');
  });
});

describe('Password change: signOutAllSessions signs out "all active sessions (web dashboard and mobile apps)"', () => {
  it('refuses every earlier password sign-in (dashboard, mobile app), and keeps the integration’s client_credentials token, which no password issued', async () => {
    const client = await createClient(service);
    const dashboard = await passwordToken(service.url, client.email, client.password);
    const mobile = await passwordToken(service.url, client.email, client.password);
    const integration = client.token; // client_credentials: the account id and its client secret
    const readSelf = (token: string) =>
      request(service.url, 'GET', `/users/v1/api/users/email?email=${encodeURIComponent(client.email)}`, undefined, {
        authorization: `Bearer ${token}`,
        'ocp-apim-subscription-key': client.subscriptionKey,
      });

    const changed = await client.call('PUT', '/users/v1/api/user/changepassword', {
      id: client.id,
      oldPassword: client.password,
      newPassword: 'a passphrase after the leak',
      signOutAllSessions: true,
    });
    expect(changed.status).toBe(204);

    expect((await readSelf(dashboard)).status).toBe(401);
    expect((await readSelf(mobile)).status).toBe(401);
    expect((await readSelf(integration)).status).toBe(200);
    expect((await readSelf(await passwordToken(service.url, client.email, 'a passphrase after the leak'))).status).toBe(200);
    expect((await readSelf(await clientToken(service.url, client.id, client.clientSecret))).status).toBe(200);
  });
});

describe('Date-times are RFC 3339: a leap second (23:59:60 UTC) is one', () => {
  it('GET /events?since= and /webhook/deliveries?from= take 23:59:60Z and its equivalent with an offset; 60 at another time is 400', async () => {
    const client = await commsClient();
    for (const since of ['2016-12-31T23:59:60Z', '2017-01-01T00:59:60.5%2B01:00', '2016-12-31t23:59:60z']) {
      expect((await client.call('GET', `${api}/events?since=${since}`)).status, since).toBe(200);
      expect((await client.call('GET', `${api}/webhook/deliveries?from=${since}`)).status, since).toBe(200);
    }
    const elsewhen = await client.call('GET', `${api}/events?since=2016-12-31T22:59:60Z`);
    expect(elsewhen.status).toBe(400);
    expect(elsewhen.body.errors).toEqual([{ path: 'since', message: expect.stringContaining('ISO 8601') }]);
  });

  it('is read as the last millisecond of its minute (an answer, like a POSIX time, has no 61st second; the order of times is kept)', async () => {
    const client = await commsClient();
    const event = await client.call('POST', '/checkin/v1/api/event', { title: 'New Year', startTime: '2016-12-31T23:59:60.250Z', endTime: '2017-01-01T01:00:00Z' });
    expect(event.status, JSON.stringify(event.body)).toBe(200);
    expect(event.body.startTime).toBe('2016-12-31T23:59:59.999Z');
  });
});

describe('Users: User.email is any string, kept as given, and GET /users/email still finds the user by it', () => {
  it('an email written with white space around it (a CRM cell) is answered as given and found by itself, trimmed or not; the sign-in by email works', async () => {
    const client = await createClient(service);
    const email = ` Ops+CRM-${Date.now()}@Example.com `;
    expect((await client.call('PUT', '/users/v1/api/user', { id: client.id, email })).status).toBe(204);

    const exact = await client.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(email)}`);
    expect(exact.status, JSON.stringify(exact.body)).toBe(200);
    expect(exact.body).toMatchObject({ id: client.id, email });
    const trimmed = await client.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(email.trim().toLowerCase())}`);
    expect(trimmed.status).toBe(200);
    expect(await passwordToken(service.url, email.trim(), client.password)).toBeTruthy();
  });
});
