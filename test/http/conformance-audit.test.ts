import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import path from 'node:path';
import { readOutbox } from '../support/mail-readers.js';
import { eventually } from '../webhooks/receiver.js';

/**
 * The spec read as an integrator holding it would: types exactly as it gives them
 * ("Resources and their fields"), and customId "usable instead of id" wherever a guest is named.
 */
let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

describe('Guest fields typed string take any string (spec: Resources and their fields, Guest)', () => {
  const long = (n: number) => 'x'.repeat(n);
  const record = {
    firstName: long(300),
    otherNames: long(300),
    lastName: long(300),
    additionalInfo: long(20_000),
    barcode: long(1_000),
    tags: long(5_000),
    createdBy: long(300),
    blockedReason: long(2_000),
    correlationId: long(300),
    email: 'reception desk, ask for Ada',
  };

  it('keeps long texts and an email that is not an address, at create, batch and upsert, and answers them as given', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, ...record });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject(record);
    const batch = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ ...record, barcode: long(999), customId: 'b-1' }]);
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body[0]).toMatchObject({ firstName: record.firstName, email: record.email });
    const upsert = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'b-1', lastName: long(400), email: 'n/a' }]);
    expect(upsert.status, JSON.stringify(upsert.body)).toBe(204);
    expect((await alice.call('GET', '/checkin/v1/api/guest/b-1')).body).toMatchObject({ lastName: long(400), email: 'n/a' });
  });

  it('scans, blocks and finds a guest by a barcode longer than 500 characters', async () => {
    const eventId = await newEvent(alice);
    const barcode = `LONG-${long(600)}`;
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Long', barcode }])).status).toBe(200);
    const blocked = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { barcodes: [barcode] });
    expect(blocked.status, JSON.stringify(blocked.body)).toBe(200);
    const scan = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode });
    expect(scan.status, JSON.stringify(scan.body)).toBe(200);
    expect(scan.body).toMatchObject({ result: 'rejected', reason: 'blocked' });
  });

  it('takes an image over the recommended 50 kB ("should be under", not must)', async () => {
    const eventId = await newEvent(alice);
    const image = Buffer.alloc(90_000, 7).toString('base64');
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, image });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.image).toBe(image);
  });

  it('takes plusOnes and admittedPlusOnes up to the int32 maximum; beyond int32 is 400', async () => {
    const eventId = await newEvent(alice);
    const max = 2_147_483_647;
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, plusOnes: max, admitted: '2026-06-01T19:00:00Z', admittedPlusOnes: max });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ plusOnes: max, admittedPlusOnes: max });
    const over = await alice.call('POST', '/checkin/v1/api/guest', { eventId, plusOnes: max + 1 });
    expect(over.status).toBe(400);
    expect(over.body.errors[0].path).toBe('plusOnes');
  });
});

describe('a guest email that is not an address', () => {
  it('fails its invitation send (comms.failed, error invalid_email) instead of refusing the guest', async () => {
    const eventId = await newEvent(alice);
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello {{firstName}}</p>' });
    expect(template.status).toBe(200);
    const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Nomail', email: 'ask at the desk', commsTemplateId: template.body.id });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);
    const [invitation] = await eventually(async () => {
      const items = (await alice.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${guest.body.id}`)).body.items as { status: string; error?: string }[];
      return items.length === 1 && items[0]!.status === 'failed' ? items : undefined;
    }, 60_000, 'the invitation to fail');
    expect(invitation!.error).toMatch(/^invalid_email/);
  });

  it('is kept as given with white space around an address, and the invitation goes to the address', async () => {
    const eventId = await newEvent(alice);
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello</p>' });
    const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, email: '  padded@example.com ', commsTemplateId: template.body.id });
    expect(guest.body.email).toBe('  padded@example.com ');
    const [mail] = await eventually(async () => {
      const mails = (await readOutbox(path.join(service.dataDir, 'outbox'))).filter((m) => m.to.email === 'padded@example.com');
      return mails.length > 0 ? mails : undefined;
    }, 60_000, 'the mail to padded@example.com');
    expect(mail).toBeDefined();
  });

  it('is refused up front by comms send, naming the guest (400), like a guest without email', async () => {
    const eventId = await newEvent(alice);
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello</p>' });
    const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Nomail', email: 'ask at the desk' });
    const sent = await alice.call('POST', '/comms/v1/api/comms/send', { templateId: template.body.id, attendeeIds: [guest.body.id] });
    expect(sent.status).toBe(400);
    expect(sent.body.errors).toEqual([{ path: 'attendeeIds.0', message: expect.stringContaining('not an email address') }]);
  });
});

describe('customId usable instead of id on the comms routes (spec: Guest.customId)', () => {
  it('comms send takes customIds in attendeeIds and answers the guest ids; the invitations list filters by customId', async () => {
    const eventId = await newEvent(alice);
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello {{firstName}}</p>' });
    const guests = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'Cu', email: 'cu@example.com', customId: 'CRM-77' },
      { firstName: 'Id', email: 'id@example.com' },
    ]);
    const [byCustomId, byId] = guests.body as { id: string }[];
    const sent = await alice.call('POST', '/comms/v1/api/comms/send', { templateId: template.body.id, attendeeIds: ['crm-77', byId!.id] });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.invitations.map((i: { attendeeId: string }) => i.attendeeId)).toEqual([byCustomId!.id, byId!.id]);
    const listed = await alice.call('GET', `/comms/v1/api/comms/invitations?attendeeId=CRM-77`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.items.map((i: { attendeeId: string }) => i.attendeeId)).toEqual([byCustomId!.id]);
    const unknown = await alice.call('POST', '/comms/v1/api/comms/send', { templateId: template.body.id, attendeeIds: ['CRM-404'] });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toContain('CRM-404');
    expect((await alice.call('GET', `/comms/v1/api/comms/invitations?attendeeId=CRM-404`)).body.items).toEqual([]);
  });
});

describe('Event, Comms template, User and Team member fields typed string take any string (spec: Resources and their fields)', () => {
  const long = (n: number) => 'y'.repeat(n);

  it('an event keeps a long title, tags and customData', async () => {
    const texts = { title: long(600), tags: long(5_000), customData: long(120_000) };
    const created = await alice.call('POST', '/checkin/v1/api/event', { ...texts, startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-01T23:00:00Z' });
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(200);
    expect(created.body).toMatchObject(texts);
  });

  it('a template keeps a long name, subject, fromName and html', async () => {
    const eventId = await newEvent(alice);
    const template = { eventId, name: long(300), subject: long(600), fromName: long(300), html: `<p>${long(600_000)}</p>` };
    const created = await alice.call('POST', '/comms/v1/api/comms/template', template);
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(200);
    expect(created.body).toMatchObject(template);
  });

  it('a user update keeps names as given and an email that is not an address; GET by that email finds the user', async () => {
    const user = await createClient(service);
    const fields = { firstName: long(300), lastName: ' Lovelace ', companyName: long(300), customData: long(120_000), email: 'front desk' };
    const updated = await user.call('PUT', '/users/v1/api/user', { id: user.id, ...fields });
    expect(updated.status, JSON.stringify(updated.body)).toBe(204);
    const read = await user.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent('front desk')}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject(fields);
  });

  it('a team member keeps long names and an email that is not an address', async () => {
    const member = { userName: `door-${long(250)}-${Date.now()}`, password: 'door staff pass 1', email: 'door staff, north gate', firstName: long(300), lastName: long(300) };
    const created = await alice.call('POST', '/checkin/v1/api/teammember', member);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const { password: _password, ...shown } = member;
    expect(created.body).toMatchObject(shown);
    const listed = await alice.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(member.userName)}/events`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([expect.objectContaining(shown)]);
  });
});

describe('empty optional strings from a CRM or spreadsheet export', () => {
  it('an empty blockedReason does not block the guest; a non-empty one without blockedDate still does', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'Open', barcode: 'E-1', blockedReason: '' },
      { firstName: 'Shut', barcode: 'E-2', blockedReason: 'unpaid' },
    ]);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body[0].blockedDate).toBeNull();
    expect(reply.body[1].blockedDate).toEqual(expect.any(String));
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'E-1' })).body.result).toBe('admitted');
  });

  it('an empty customId means none, like an empty email', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'A', customId: '' }, { firstName: 'B', customId: '' }]);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.map((g: { customId: string | null }) => g.customId)).toEqual([null, null]);
  });
});
