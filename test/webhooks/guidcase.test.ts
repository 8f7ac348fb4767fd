import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from './receiver.js';

/**
 * Spec: a Guest `id` is a GUID "the caller may supply ... for tracking", the webhook's
 * `data.attendeeId` is "the guest GUID supplied by the caller" and `data.templateId` "the template
 * GUID that was sent". A caller's GUID is matched in any case (RFC 4122) and answered as the
 * caller first spelled it, everywhere (docs/identifiers.md).
 */

let service: TestService;
let alice: Client;
let receiver: Receiver;

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  receiver = await startReceiver();
  const configured = await alice.call('POST', '/comms/v1/api/comms/webhook', { url: receiver.url });
  expect(configured.status).toBe(200);
  receiver.secret = configured.body.secret;
});
afterAll(async () => {
  await receiver.close();
  await service.close();
});

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
const times = { startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };
const ids = (items: { id: string }[]) => items.map((item) => item.id);

describe('a caller-supplied guest id and template id in upper case', () => {
  it('are matched in any case and answered, exported and sent in webhooks as the caller sent them', async () => {
    const eventId = (await alice.call('POST', `${api}/event`, { title: 'Gala', ...times })).body.id as string;
    const templateId = randomUUID().toUpperCase();
    const guestId = randomUUID().toUpperCase();

    const template = await alice.call('POST', `${comms}/template`, { id: templateId, eventId, name: 'Invite', subject: 'Hi', html: '<p>Hi {{firstName}} {{attendeeId}}</p>' });
    expect([template.status, template.body.id]).toEqual([200, templateId]);
    expect((await alice.call('GET', `${comms}/template/${templateId.toLowerCase()}`)).body.id).toBe(templateId);
    expect(ids((await alice.call('GET', `${comms}/templates?eventId=${eventId}`)).body.items)).toEqual([templateId]);
    // A duplicate create names the same template in any case and gets the first spelling back.
    const again = await alice.call('POST', `${comms}/template`, { id: templateId.toLowerCase(), eventId, name: 'Other', html: '<p>x</p>' });
    expect([again.status, again.body.id, again.body.name]).toEqual([200, templateId, 'Invite']);

    const created = await alice.call('POST', `${api}/guest`, {
      id: guestId,
      eventId,
      firstName: 'Ada',
      email: 'ada@example.com',
      additionalInfo: 'tracked',
      commsTemplateId: templateId,
    });
    expect([created.status, created.body.id]).toEqual([200, guestId]);
    expect((await alice.call('GET', `${api}/guest/${guestId.toLowerCase()}`)).body.id).toBe(guestId);
    expect((await alice.call('GET', `${api}/guest/${guestId}`)).body.id).toBe(guestId);
    expect(ids((await alice.call('GET', `${api}/guests/${eventId}`)).body.items)).toEqual([guestId]);
    expect(ids((await alice.call('GET', `${api}/guests/${eventId}/byinfo?additionalInfo=tracked`)).body)).toEqual([guestId]);
    // The same id in another case is the same guest: a retried create finds it, and keeps the first spelling.
    const retried = await alice.call('POST', `${api}/guest`, { id: guestId.toLowerCase(), eventId, firstName: 'Ada', email: 'ada@example.com', additionalInfo: 'tracked', commsTemplateId: templateId });
    expect([retried.status, retried.body.id]).toEqual([200, guestId]);

    const history = await alice.call('GET', `${api}/guest/${guestId.toLowerCase()}/history`);
    expect([history.status, history.body.guestId]).toEqual([200, guestId]);
    const personal = await alice.call('GET', `${api}/guest/${guestId.toLowerCase()}/personal-data`);
    expect([personal.status, personal.body.guestId, personal.body.guest.id]).toEqual([200, guestId, guestId]);

    const exported = await alice.call('POST', `${api}/event/export?type=csv`, { id: eventId, title: 'Gala', ...times });
    expect(exported.status).toBe(200);
    const csv = await (await fetch(`${service.url}${exported.body.url}`, { headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey } })).text();
    expect(csv).toContain(guestId);
    expect(csv).not.toContain(guestId.toLowerCase());

    // The invitation the create requested reaches the webhook with both ids as sent.
    const [sent] = await receiver.waitFor(1, 20_000);
    expect(sent!.specVerified).toBe(true);
    expect([sent!.body.type, sent!.body.data.attendeeId, sent!.body.data.templateId]).toEqual(['comms.sent', guestId, templateId]);
    const invitationId = sent!.body.data.attendeeInvitationId as string;
    const invitation = await alice.call('GET', `${comms}/invitations/${invitationId}`);
    expect([invitation.status, invitation.body.attendeeId, invitation.body.templateId]).toEqual([200, guestId, templateId]);
    const events = await eventually(async () => {
      const reply = await alice.call('GET', `${comms}/events`);
      return reply.status === 200 && reply.body.items.length > 0 ? reply.body.items : undefined;
    });
    expect(events.map((e: { data: { attendeeId: string; templateId: string } }) => [e.data.attendeeId, e.data.templateId])).toEqual([[guestId, templateId]]);

    // An explicit send, naming both in lowercase: its answer and its webhook show the first spellings.
    const send = await alice.call('POST', `${comms}/send`, { templateId: templateId.toLowerCase(), attendeeIds: [guestId.toLowerCase()] });
    expect([send.status, send.body.templateId, send.body.invitations[0].attendeeId]).toEqual([200, templateId, guestId]);
    const [, resent] = await receiver.waitFor(2, 20_000);
    expect([resent!.body.data.attendeeId, resent!.body.data.templateId]).toEqual([guestId, templateId]);

    // A rebuild gets the spelling from the events (GuestRegistered, TemplateCreated), not from the documents.
    await service.runner!.rebuild(['guests', 'templates', 'invitations']);
    expect((await alice.call('GET', `${api}/guest/${guestId.toLowerCase()}`)).body.id).toBe(guestId);
    expect((await alice.call('GET', `${comms}/template/${templateId.toLowerCase()}`)).body.id).toBe(templateId);
    expect((await alice.call('GET', `${comms}/invitations/${invitationId}`)).body.attendeeId).toBe(guestId);
  });

  it('keeps lowercase keys: a guest made with a lowercase or generated id, and the stored documents, are as before', async () => {
    const eventId = (await alice.call('POST', `${api}/event`, { title: 'Plain', ...times })).body.id as string;
    const lower = randomUUID();
    const made = await alice.call('POST', `${api}/guest`, { id: lower, eventId, firstName: 'Bo' });
    expect([made.status, made.body.id]).toEqual([200, lower]);
    expect((await alice.call('GET', `${api}/guest/${lower.toUpperCase()}`)).body.id).toBe(lower);
    const upper = randomUUID().toUpperCase();
    await alice.call('POST', `${api}/guest`, { id: upper, eventId, firstName: 'Cy' });
    // The document is keyed and matched by the lowercase GUID; the spelling is kept beside it.
    const doc = await service.platform.readStore.collection<{ _id: string; guestId: string; guestIdAsSent?: string }>('guests').findOne({ clientId: alice.id, guestId: upper.toLowerCase() });
    expect([doc?.guestId, doc?.guestIdAsSent]).toEqual([upper.toLowerCase(), upper]);
  });
});
