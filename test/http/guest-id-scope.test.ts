/**
 * Issue 10 item 12 for guest ids: "another client learns nothing from an id". Two clients use
 * the same guest GUIDs (and the same event id); each sees, scans, invites, exports, erases and
 * reads the history of its own guest only (docs/identifiers.md, "Ids are scoped per client").
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guestStream, legacyGuestStream } from '../../src/domain/guest.js';
import { readOutbox } from '../support/mail-readers.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
const eventId = 'gala-2026';
const times = { startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' };

let service: TestService;
let alice: Client;
let bob: Client;
const receivers = new Map<string, Receiver>();
const templates = new Map<string, string>();
/** The GUIDs both clients use: `shared` with a barcode, `ticketed` without one (a signed ticket). */
const shared = randomUUID();
const ticketed = randomUUID();
/** Bob creates `shared` in upper case: his answers spell it so, Alice's as she sent it (docs/identifiers.md, Which ids are GUIDs). */
const sharedOf = (client: Client) => (client === bob ? shared.toUpperCase() : shared);

/** Each client's guests differ in every personal value, so a leak shows in any answer. */
const personOf = (client: Client) => {
  const who = client === alice ? 'Alice' : 'Bob';
  return {
    firstName: `${who}Guest`,
    lastName: `${who}Family`,
    email: `${who.toLowerCase()}.guest.${client.id.slice(0, 8)}@example.com`,
    barcode: `BC-${who}-${client.id.slice(0, 8)}`,
    customId: `crm-${who.toLowerCase()}`,
    additionalInfo: `vip table of ${who}`,
  };
};

async function download(client: Client, pathname: string): Promise<string> {
  const response = await fetch(`${service.url}${pathname}`, {
    headers: { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey },
  });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer()).toString('utf8');
}

async function snapshot(collection: string): Promise<unknown[]> {
  const docs: unknown[] = [];
  for await (const doc of service.platform.readStore.collection(collection).stream({}, { sort: { _id: 1 } })) docs.push(doc);
  return docs;
}

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  for (const client of [alice, bob]) {
    expect((await client.call('POST', `${api}/event`, { id: eventId, title: 'Gala', ...times })).status).toBe(200);
    const template = await client.call('POST', `${comms}/template`, {
      eventId,
      name: 'Invitation',
      subject: 'Welcome {{firstName}}',
      html: '<p>Dear {{fullName}}</p><a href="https://tickets.example.com/t/{{attendeeId}}">Ticket</a>',
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    templates.set(client.id, template.body.id);
    const receiver = await startReceiver();
    const configured = await client.call('POST', `${comms}/webhook`, { url: receiver.url });
    expect(configured.status, JSON.stringify(configured.body)).toBe(200);
    receiver.secret = configured.body.secret;
    receivers.set(client.id, receiver);
  }
});
afterAll(async () => {
  await Promise.all([...receivers.values()].map((r) => r.close()));
  await service.close();
});

describe('guest ids are scoped per client (issue 10 item 12)', () => {
  it('a create with a GUID another client’s guest has is a create for the caller (single, upsert and batch)', async () => {
    const a = await alice.call('POST', `${api}/guest`, { id: shared, eventId, ...personOf(alice) });
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    const b = await bob.call('PUT', `${api}/guests/${eventId}/upsert`, [{ id: shared.toUpperCase(), ...personOf(bob) }]);
    expect(b.status, JSON.stringify(b.body)).toBe(204);
    for (const client of [alice, bob]) {
      const batch = await client.call('POST', `${api}/guests/${eventId}`, [{ id: ticketed, firstName: `${personOf(client).firstName}Two`, lastName: 'Zed' }]);
      expect(batch.status, JSON.stringify(batch.body)).toBe(200);
      expect(batch.body[0]).toMatchObject({ id: ticketed, eventId });
    }
    // A retried create of the caller's own guest is still the same guest (200, nothing changes).
    const again = await alice.call('POST', `${api}/guest`, { id: shared, eventId, ...personOf(alice) });
    expect(again.status).toBe(200);
    expect((await alice.call('GET', `${api}/guest/${shared}/history`)).body.events.filter((e: { type: string }) => e.type === 'GuestRegistered')).toHaveLength(1);
    // Each guest lives on its client's own stream.
    const [aliceFirst] = await service.platform.eventStore.readStream(guestStream(alice.id, shared));
    const [bobFirst] = await service.platform.eventStore.readStream(guestStream(bob.id, shared));
    expect(aliceFirst).toMatchObject({ type: 'GuestRegistered', metadata: { tenantId: alice.id }, data: { guestId: shared, firstName: 'AliceGuest' } });
    expect(bobFirst).toMatchObject({ type: 'GuestRegistered', metadata: { tenantId: bob.id }, data: { guestId: shared, firstName: 'BobGuest' } });
  });

  it('get, list and byinfo show each client its own guest, with the plain GUID as id', async () => {
    for (const client of [alice, bob]) {
      const person = personOf(client);
      const one = await client.call('GET', `${api}/guest/${shared}`);
      expect(one.body).toMatchObject({ id: sharedOf(client), eventId, firstName: person.firstName, email: person.email });
      const list = await client.call('GET', `${api}/guests/${eventId}`);
      expect(list.body.items.map((g: { id: string; firstName: string }) => [g.id, g.firstName]).sort()).toEqual(
        [[sharedOf(client), person.firstName], [ticketed, `${person.firstName}Two`]].sort(),
      );
      const byInfo = await client.call('GET', `${api}/guests/${eventId}/byinfo?additionalInfo=vip`);
      expect(byInfo.body).toEqual([expect.objectContaining({ id: sharedOf(client), additionalInfo: person.additionalInfo })]);
      expect((await client.call('GET', `${api}/guest/${person.customId}`)).body.id).toBe(sharedOf(client));
    }
  });

  it('check-in by guestId and by barcode admits the caller’s guest only', async () => {
    const byId = await alice.call('POST', `${api}/guests/${eventId}/checkin`, { guestId: shared, gate: 'A' });
    expect(byId.body).toMatchObject({ result: 'admitted', guest: { id: shared, firstName: 'AliceGuest' } });
    expect((await bob.call('GET', `${api}/guest/${shared}`)).body.admitted).toBeNull();
    // Alice's barcode is nothing to Bob; Bob's own barcode admits Bob's guest.
    const foreign = await bob.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: personOf(alice).barcode });
    expect(foreign.body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    const byBarcode = await bob.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: personOf(bob).barcode, gate: 'B' });
    expect(byBarcode.body).toMatchObject({ result: 'admitted', guest: { id: sharedOf(bob), firstName: 'BobGuest' } });
    // Undo by guest id: Bob's check-in is annulled, Alice's stands.
    expect((await bob.call('POST', `${api}/guests/${eventId}/checkin/undo`, { guestId: shared })).status).toBe(200);
    expect((await bob.call('GET', `${api}/guest/${shared}`)).body.admitted).toBeNull();
    expect((await alice.call('GET', `${api}/guest/${shared}`)).body.admitted).toEqual(expect.any(String));
    const aliceScans = (await alice.call('GET', `${api}/event/${eventId}/scans`)).body.items;
    expect(aliceScans).toEqual([expect.objectContaining({ guestId: shared, result: 'admitted', gate: 'A' })]);
  });

  it('a signed ticket admits its own client’s guest only', async () => {
    const aliceTicket = await alice.call('GET', `${api}/guest/${ticketed}/ticket`);
    const bobTicket = await bob.call('GET', `${api}/guest/${ticketed}/ticket`);
    expect(aliceTicket.body).toMatchObject({ guestId: ticketed, kind: 'signed' });
    expect(bobTicket.body).toMatchObject({ guestId: ticketed, kind: 'signed' });
    expect(bobTicket.body.code).not.toBe(aliceTicket.body.code);
    // Bob's ticket names the same GUID and event id, but is signed with Bob's event's key.
    const forged = await alice.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: bobTicket.body.code });
    expect(forged.body).toMatchObject({ result: 'rejected', reason: 'invalid_signature' });
    const own = await bob.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: bobTicket.body.code });
    expect(own.body).toMatchObject({ result: 'admitted', guest: { id: ticketed, firstName: 'BobGuestTwo' } });
    expect((await alice.call('GET', `${api}/guest/${ticketed}`)).body.admitted).toBeNull();
  });

  it('block changes the caller’s guest only', async () => {
    const blocked = await bob.call('POST', `${api}/guests/${eventId}/block`, { ids: [shared], reason: 'lost ticket' });
    expect(blocked.body).toEqual([expect.objectContaining({ id: sharedOf(bob), blockedReason: 'lost ticket' })]);
    expect((await alice.call('GET', `${api}/guest/${shared}`)).body.blockedDate).toBeNull();
    expect((await bob.call('POST', `${api}/guests/${eventId}/unblock`, { ids: [shared] })).status).toBe(200);
  });

  it('history shows the caller’s guest’s events only', async () => {
    for (const client of [alice, bob]) {
      const history = await client.call('GET', `${api}/guest/${shared}/history`);
      expect(history.body.guestId).toBe(sharedOf(client));
      expect(new Set(history.body.events.map((e: { stream: string }) => e.stream))).toEqual(new Set([guestStream(client.id, shared)]));
      expect(history.body.events[0].data).toMatchObject({ firstName: personOf(client).firstName });
    }
  });

  it('invitations go to the caller’s guest; the email and the webhook name the plain GUID', async () => {
    for (const client of [alice, bob]) {
      const sent = await client.call('POST', `${comms}/send`, { templateId: templates.get(client.id), attendeeIds: [shared] });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      expect(sent.body.invitations).toEqual([expect.objectContaining({ attendeeId: sharedOf(client) })]);
    }
    const outbox = path.join(service.dataDir, 'outbox');
    for (const client of [alice, bob]) {
      const person = personOf(client);
      const mail = await eventually(async () => (await readOutbox(outbox)).find((m) => m.to.email === person.email), 60_000, `email to ${person.email}`);
      expect(mail.subject).toBe(`Welcome ${person.firstName}`);
      expect(mail.html).toContain(`https://tickets.example.com/t/${sharedOf(client)}`);
      const invitations = await eventually(async () => {
        const reply = await client.call('GET', `${comms}/invitations?attendeeId=${shared}`);
        return reply.body.items?.[0]?.status === 'sent' ? (reply.body.items as { attendeeInvitationId: string; to: string }[]) : undefined;
      }, 60_000, 'invitation sent');
      expect(invitations).toEqual([expect.objectContaining({ to: person.email })]);
      const [delivery] = await receivers.get(client.id)!.waitFor(1, 60_000);
      expect(delivery!.specVerified).toBe(true);
      expect(delivery!.body).toMatchObject({ type: 'comms.sent', data: { attendeeId: sharedOf(client), attendeeInvitationId: invitations[0]!.attendeeInvitationId } });
    }
  });

  it('an export lists the caller’s guests only', async () => {
    for (const client of [alice, bob]) {
      const exported = await client.call('POST', `${api}/event/export?type=csv`, { id: eventId, title: 'Gala', ...times });
      expect(exported.status, JSON.stringify(exported.body)).toBe(200);
      expect(exported.body.rowCount).toBe(2);
      const csv = await download(client, exported.body.url);
      const other = client === alice ? bob : alice;
      expect(csv).toContain(sharedOf(client));
      expect(csv).toContain(personOf(client).lastName);
      expect(csv).not.toContain(personOf(other).lastName);
    }
  });

  it('a projections rebuild gives the same documents', async () => {
    const collections = ['guests', 'scans', 'funnel_arrivals', 'funnel_invitations', 'invitations'];
    const live = await Promise.all(collections.map(snapshot));
    expect((live[0] as { clientId: string; guestId: string }[]).filter((g) => g.guestId === shared).map((g) => g.clientId).sort()).toEqual([alice.id, bob.id].sort());
    await service.runner!.rebuild(['guests', 'funnel', 'invitations']);
    expect(await Promise.all(collections.map(snapshot))).toEqual(live);
  });

  it('erasing one client’s guest leaves the other client’s guest with the same GUID intact', async () => {
    const erased = await alice.call('POST', `${api}/guest/${shared}/erase`, { reason: 'GDPR request' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body).toMatchObject({ id: shared, erased: true });
    expect((await alice.call('GET', `${api}/guest/${shared}`)).body).toMatchObject({ id: shared, erased: true, firstName: null });

    const bobs = personOf(bob);
    expect((await bob.call('GET', `${api}/guest/${shared}`)).body).toMatchObject({ id: sharedOf(bob), firstName: bobs.firstName, email: bobs.email });
    expect((await bob.call('GET', `${api}/guest/${shared}`)).body.erased).toBeUndefined();
    // Bob's data key is his own: his guest's events still open.
    const access = await bob.call('GET', `${api}/guest/${shared}/personal-data`);
    expect(access.status).toBe(200);
    expect(access.body).toMatchObject({
      guestId: sharedOf(bob),
      eventId,
      guest: { id: sharedOf(bob), firstName: bobs.firstName, barcode: bobs.barcode },
      invitations: [{ status: 'sent', to: bobs.email }],
    });
    expect(access.body.history.find((e: { type: string }) => e.type === 'GuestRegistered').data).toMatchObject({ firstName: bobs.firstName, email: bobs.email });
    expect((await readOutbox(path.join(service.dataDir, 'outbox'))).some((m) => m.to.email === bobs.email)).toBe(true);
    // And Alice's personal-data answer is her erased guest's.
    const alices = await alice.call('GET', `${api}/guest/${shared}/personal-data`);
    expect(alices.body).toMatchObject({ guestId: shared, guest: { erased: true } });
    expect(JSON.stringify(alices.body)).not.toContain(bobs.lastName);
  });
});

describe('a guest stored before guest ids were scoped (`guest-<guid>`)', () => {
  it('keeps working for the client it belongs to; another client’s same GUID is its own guest', async () => {
    const legacyId = randomUUID();
    const appended = await service.platform.eventStore.append(legacyGuestStream(legacyId), [{
      id: randomUUID(),
      type: 'GuestRegistered',
      data: { guestId: legacyId, clientId: alice.id, eventId, tags: [], firstName: 'Olden', lastName: 'Times', barcode: `OLD-${legacyId}`, createdBy: alice.id },
      metadata: { tenantId: alice.id, actor: { type: 'client', id: alice.id }, correlationId: randomUUID(), occurredAt: new Date().toISOString() },
    }], 'no_stream');
    await service.runner!.waitFor(appended.position);

    expect((await alice.call('GET', `${api}/guest/${legacyId}`)).body).toMatchObject({ id: legacyId, firstName: 'Olden' });
    expect((await bob.call('GET', `${api}/guest/${legacyId}`)).status).toBe(404);
    const scan = await alice.call('POST', `${api}/guests/${eventId}/checkin`, { guestId: legacyId });
    expect(scan.body).toMatchObject({ result: 'admitted', guest: { id: legacyId, firstName: 'Olden' } });
    const updated = await alice.call('PUT', `${api}/guests/${eventId}/upsert`, [{ id: legacyId, lastName: 'Newer' }]);
    expect(updated.status).toBe(204);
    expect((await service.platform.eventStore.readStream(legacyGuestStream(legacyId))).map((e) => e.type)).toEqual([
      'GuestRegistered',
      'GuestAdmitted',
      'GuestDetailsChanged',
    ]);
    expect(await service.platform.eventStore.readStream(guestStream(alice.id, legacyId))).toEqual([]);
    const history = await alice.call('GET', `${api}/guest/${legacyId}/history`);
    expect(history.body.events.map((e: { stream: string }) => e.stream)).toEqual(Array(3).fill(legacyGuestStream(legacyId)));

    // Bob's guest with the same GUID is a new guest of Bob's, on a stream of his own.
    const bobs = await bob.call('POST', `${api}/guest`, { id: legacyId, eventId, firstName: 'Fresh' });
    expect(bobs.status, JSON.stringify(bobs.body)).toBe(200);
    expect((await alice.call('GET', `${api}/guest/${legacyId}`)).body).toMatchObject({ firstName: 'Olden', lastName: 'Newer', admitted: expect.any(String) });
    expect((await bob.call('GET', `${api}/guest/${legacyId}`)).body).toMatchObject({ firstName: 'Fresh' });

    // Erasing Alice's old guest also deletes a data key named by the bare GUID (keys made before the
    // scoping), and leaves Bob's guest and key alone; a rebuild gives the same documents.
    const dataKeys = service.platform.dataKeys!;
    expect((await dataKeys.keysFor([legacyId], true)).get(legacyId)).toBeInstanceOf(Buffer);
    expect((await alice.call('POST', `${api}/guest/${legacyId}/erase`, { reason: 'request' })).status).toBe(200);
    expect((await dataKeys.keysFor([legacyId], false)).get(legacyId)).toBeNull();
    const bobsHistory = await bob.call('GET', `${api}/guest/${legacyId}/history`);
    expect(bobsHistory.body.events[0].data).toMatchObject({ guestId: legacyId, firstName: 'Fresh' });
    expect((await alice.call('GET', `${api}/guest/${legacyId}`)).body).toMatchObject({ erased: true, firstName: null });
    expect((await bob.call('GET', `${api}/guest/${legacyId}`)).body).toMatchObject({ firstName: 'Fresh' });
    const live = await snapshot('guests');
    await service.runner!.rebuild(['guests']);
    expect(await snapshot('guests')).toEqual(live);
  });
});
