import fs from 'node:fs';
import path from 'node:path';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invitationMessage, type InvitationParts } from '../../src/comms/invitation-message.js';
import { readOutbox } from '../support/mail-readers.js';
import { filesHolding } from '../support/files-holding.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';

/**
 * Internationalized email addresses (docs/invitations.md, "Internationalized addresses"): an
 * address whose DOMAIN is internationalized (`ada@bücher.de`, the IDN `xn--bcher-kva.de`) is an
 * address: it is sent with the domain's ASCII form, and `ada@bücher.de`, `ada@BÜCHER.de` and
 * `ada@xn--bcher-kva.de` are one address wherever addresses are keyed or compared. A local part
 * beyond ASCII (SMTPUTF8, RFC 6531) is refused, saying why.
 */
const api = '/comms/v1/api/comms';
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });

let service: TestService;
const outbox = () => path.join(service.dataDir, 'outbox');

beforeAll(async () => {
  service = await startTestService({
    SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    INVITES_SENDING_ADDRESS: 'invites@checkin.test',
  });
});
afterAll(async () => {
  await service.close();
});

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

async function eventAndTemplate(client: Client, template: Record<string, unknown> = {}) {
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
  expect(event.status).toBe(200);
  const created = await client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Invite', html: '<p>Dear {{firstName}}</p>', ...template });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return { eventId: event.body.id as string, templateId: created.body.id as string };
}

async function invitationsOf(client: Client, attendeeId: string, status: string) {
  return eventually(async () => {
    const reply = await client.call('GET', `${api}/invitations?attendeeId=${attendeeId}`);
    const items = reply.body.items as { status: string }[];
    return items.length > 0 && items.every((i) => i.status === status) ? (reply.body.items as any[]) : undefined;
  }, 30_000, `invitations of ${attendeeId} ${status}`);
}

const rawEml = (invitationId: string) => fs.readFileSync(path.join(outbox(), `${invitationId}.eml`), 'latin1');

describe('an address whose domain is internationalized is sent with the domain in ASCII form', () => {
  it('a guest ada@bücher.de gets the invitation, its To header names ada@xn--bcher-kva.de', async () => {
    const client = await commsClient();
    const { eventId, templateId } = await eventAndTemplate(client);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: 'ada@bücher.de', commsTemplateId: templateId });
    expect(guest.status).toBe(200);
    const [invitation] = await invitationsOf(client, guest.body.id, 'sent');
    expect(invitation.to).toBe('ada@xn--bcher-kva.de');
    // mailparser shows the domain in Unicode again (it decodes punycode), the bytes hold the ASCII form.
    const [mail] = (await readOutbox(outbox())).filter((m) => m.messageKey === invitation.attendeeInvitationId);
    expect(mail!.to.email).toBe('ada@bücher.de');
    expect(rawEml(invitation.attendeeInvitationId)).toMatch(/^To: Ada <ada@xn--bcher-kva\.de>\r?$/m);
  });

  it('POST /send takes a guest whose email has an internationalized domain (was 400)', async () => {
    const client = await commsClient();
    const { eventId, templateId } = await eventAndTemplate(client);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: 'ada@пример.рф' });
    const sent = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id] });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const [invitation] = await invitationsOf(client, guest.body.id, 'sent');
    expect(rawEml(invitation.attendeeInvitationId)).toMatch(/^To: Ada <ada@xn--e1afmkfd\.xn--p1ai>\r?$/m);
  });

  it('the message every mailer gets (SendGrid, SMTP, outbox) carries the ASCII form in to, from and replyTo', async () => {
    const parts: InvitationParts = {
      attendeeInvitationId: '2b8c0f0e-8d1c-4f43-9a55-3f1f7e3c1a10',
      clientId: 'client-1',
      guest: { id: '7d7b3a52-2f55-4d0e-8b9e-0c6f7f0d3c11', email: ' ada@BÜCHER.de ', firstName: 'Ada' },
      template: { html: '<p>Hi {{email}}</p>', fromAddress: 'gala@bücher.de', replyTo: 'desk@例え.テスト' },
      event: { title: 'Gala', startTime: '2026-12-12T19:00:00Z', endTime: '2026-12-12T23:00:00Z' },
      account: { companyName: 'Example Events' },
    };
    const message = await invitationMessage(parts, { address: 'invites@example.com' });
    expect([message.to.email, message.from.email, message.replyTo?.email]).toEqual(['ada@xn--bcher-kva.de', 'gala@xn--bcher-kva.de', 'desk@xn--r8jz45g.xn--zckzah']);
  });
});

describe('templates take an address whose domain is internationalized', () => {
  it('a fromAddress and replyTo on an IDN domain are accepted (was 400), and the sent email is from the ASCII form', async () => {
    const client = await commsClient();
    const { eventId, templateId } = await eventAndTemplate(client, { fromAddress: 'gala@bücher.de', replyTo: 'desk@bücher.de' });
    const template = await client.call('GET', `${api}/template/${templateId}`);
    expect(template.body).toMatchObject({ fromAddress: 'gala@bücher.de', replyTo: 'desk@bücher.de' });
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', email: 'bo@example.com', commsTemplateId: templateId });
    const [invitation] = await invitationsOf(client, guest.body.id, 'sent');
    const [mail] = (await readOutbox(outbox())).filter((m) => m.messageKey === invitation.attendeeInvitationId);
    expect([mail!.from.email, mail!.replyTo?.email]).toEqual(['gala@bücher.de', 'desk@bücher.de']);
    const eml = rawEml(invitation.attendeeInvitationId);
    expect(eml).toMatch(/^From: (?:.*<)?gala@xn--bcher-kva\.de>?\r?$/m);
    expect(eml).toMatch(/^Reply-To: desk@xn--bcher-kva\.de\r?$/m);
  });

  it('a local part beyond ASCII is refused with 400 saying why (SMTPUTF8), as the published pattern refuses it', async () => {
    const client = await commsClient();
    const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
    const reply = await client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'x', html: '<p>x</p>', fromAddress: 'zoë@example.com' });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body.errors)).toMatch(/fromAddress.*SMTPUTF8/);
  });

  it('the published pattern agrees with the server: it takes ada@bücher.de and refuses zoë@example.com', async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as any;
    // Read with and without the `u` flag (JSON Schema validators such as Ajv add it): the same answers.
    for (const field of ['fromAddress', 'replyTo']) {
      for (const flags of ['', 'u']) {
        const pattern = new RegExp(doc.components.schemas.CommsTemplate.properties[field].pattern, flags);
        expect(pattern.test('ada@bücher.de'), field).toBe(true);
        expect(pattern.test('ada@пример.рф'), field).toBe(true);
        expect(pattern.test('ada@xn--e1afmkfd.xn--p1ai'), field).toBe(true);
        expect(pattern.test('zoë@example.com'), field).toBe(false);
        expect(pattern.test('ada@example.com'), field).toBe(true);
        expect(pattern.test('ada@🍕.ws'), field).toBe(false);
      }
    }
    const client = await commsClient();
    const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
    const template = (fromAddress: string) => client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'x', html: '<p>x</p>', fromAddress });
    expect((await template('ada@пример.рф')).status).toBe(200);
    expect((await template('ada@🍕.ws')).status).toBe(400);
  });
});

describe('ada@bücher.de, ada@BÜCHER.de and ada@xn--bcher-kva.de are one address', () => {
  it('a bounce SendGrid reports for the punycode form suppresses the guest of the Unicode form, and the access document lists it once', async () => {
    const client = await commsClient();
    const { eventId, templateId } = await eventAndTemplate(client);
    const first = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: 'ada@bücher.de', commsTemplateId: templateId });
    const [invitation] = await invitationsOf(client, first.body.id, 'sent');
    // SendGrid reports the address it sent to: the ASCII form.
    const reply = await postSendGridEvents(service.url, privateKey, [
      { email: 'ada@xn--bcher-kva.de', timestamp: Math.floor(Date.now() / 1000), event: 'bounce', sg_event_id: `idn-${invitation.attendeeInvitationId}`, reason: '550 5.1.1 <ada@xn--bcher-kva.de>: unknown', attendeeInvitationId: invitation.attendeeInvitationId },
    ]);
    expect(reply.status).toBe(200);
    await eventually(async () => ((await client.call('GET', `${api}/invitations/${invitation.attendeeInvitationId}`)).body.providerStatus === 'bounced' ? true : undefined), 60_000, 'bounce recorded');

    const second = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: 'ada@BÜCHER.de' });
    const refused = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [first.body.id, second.body.id] });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('previous_send_permanently_failed');

    const personal = await client.call('GET', `/checkin/v1/api/guest/${first.body.id}/personal-data`);
    expect(personal.status).toBe(200);
    expect(personal.body.suppressions).toHaveLength(1);
    expect(personal.body.suppressions[0]).toMatchObject({ reason: 'bounced' });
  });
});

describe('erasure treats both forms of an internationalized address as the guest’s', () => {
  it('after erasing a bounced guest of ada@BÜCHER.de (the bounce quoting ada@xn--bcher-kva.de) no file holds the address, and ada@bücher.de stays suppressed', async () => {
    const client = await commsClient();
    const { eventId, templateId } = await eventAndTemplate(client);
    const local = `ada-${randomUUID().slice(0, 8)}`;
    const erased = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: `${local}@BÜCHER.de`, commsTemplateId: templateId });
    const [invitation] = await invitationsOf(client, erased.body.id, 'sent');
    const reply = await postSendGridEvents(service.url, privateKey, [
      { email: `${local}@xn--bcher-kva.de`, timestamp: Math.floor(Date.now() / 1000), event: 'bounce', sg_event_id: `erase-${invitation.attendeeInvitationId}`, reason: `550 5.1.1 <${local}@xn--bcher-kva.de>: unknown`, attendeeInvitationId: invitation.attendeeInvitationId },
    ]);
    expect(reply.status).toBe(200);
    await eventually(async () => ((await client.call('GET', `${api}/invitations/${invitation.attendeeInvitationId}`)).body.providerStatus === 'bounced' ? true : undefined), 60_000, 'bounce recorded');

    expect((await client.call('POST', `/checkin/v1/api/guest/${erased.body.id}/erase`, { reason: 'art. 17' })).status).toBe(200);
    expect(filesHolding(service.dataDir, [local])).toEqual([]);
    const later = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Di', email: `${local}@bücher.de` });
    const refused = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [later.body.id] });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('previous_send_permanently_failed');
  }, 120_000);
});

describe('with SendGrid (the double, through the real @sendgrid/mail)', () => {
  let sgService: TestService;
  let sendgrid: SendGridDouble;
  beforeAll(async () => {
    sendgrid = await startSendGridDouble();
    sgService = await startTestService({ SENDGRID_API_KEY: sendgrid.apiKey, SENDGRID_BASE_URL: sendgrid.url, INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  });
  afterAll(async () => {
    await sgService?.close();
    await sendgrid?.close();
  });
  const sgClient = () => createClient(sgService, { commsApiEnabled: true, senderTrusted: true });

  it('SendGrid gets the recipient with the ASCII domain (@sendgrid/mail passes the address as given; Mail Send takes ASCII addresses)', async () => {
    const client = await sgClient();
    const { eventId, templateId } = await eventAndTemplate(client);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: 'ada@bücher.de', commsTemplateId: templateId });
    await invitationsOf(client, guest.body.id, 'sent');
    const accepted = sendgrid.accepted.filter((a) => a.body.custom_args?.attendeeInvitationId && a.body.personalizations[0]!.to[0]!.email.startsWith('ada@'));
    expect(accepted.map((a) => a.body.personalizations[0]!.to[0]!.email)).toEqual(['ada@xn--bcher-kva.de']);
  });

  it('a fromAddress at another account’s verified domain is refused in its Unicode form too (bücher.de is xn--bcher-kva.de)', async () => {
    const owner = await sgClient();
    const squatter = await sgClient();
    const mine = await owner.call('POST', `${api}/domain`, { domain: 'xn--bcher-kva.de' });
    expect(mine.status, JSON.stringify(mine.body)).toBe(200);
    sendgrid.publishDns(mine.body.id);
    expect((await owner.call('POST', `${api}/domain/verify`)).body).toMatchObject({ valid: true });
    const event = await squatter.call('POST', '/checkin/v1/api/event', { title: 'Fair', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
    for (const fromAddress of ['ceo@xn--bcher-kva.de', 'ceo@bücher.de', 'ceo@News.BÜCHER.de']) {
      const spoof = await squatter.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Invite', html: '<p>Hi</p>', fromAddress });
      expect(spoof.status, fromAddress).toBe(400);
      expect(spoof.body.errors).toEqual([{ path: 'fromAddress', message: expect.stringContaining('xn--bcher-kva.de') }]);
    }
  });
});
