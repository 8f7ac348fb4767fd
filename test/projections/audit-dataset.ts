import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { StoredEvent } from '../../src/adapters/eventstore/port.js';
import { createClient, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';

/**
 * A small realistic evening, built through the HTTP API only: an account (and another one), an
 * event, guests created (by the client, and by its user signed in with a password) and upserted
 * with customIds and tags, an invitation sent and reported delivered and opened by SendGrid, a
 * team member scanning in and out (plus an unknown barcode and an undone check-in), a block and a
 * scan of the blocked guest, a ticket reissue, and an erasure.
 */
export interface AuditDataset {
  service: TestService;
  alice: Client;
  bob: Client;
  eventId: string;
  teamMemberId: string;
  templateId: string;
  /** Ann (C-1): invited, upserted, in and out, ticket reissued. Bo (C-2): annulled, blocked, rejected. Cy (C-3): upserted, erased. */
  ann: string;
  bo: string;
  cy: string;
  attendeeInvitationId: string;
  /** A moment between Ann's check-out and the ticket reissue. */
  beforeReissue: string;
  /** Signs SendGrid event reports the service accepts (it was given the public half). */
  sendGridKey: KeyObject;
}

/** `env`: more settings for the service (a MongoDB read store: MONGO_URL, MONGO_DB). */
export async function buildAuditDataset(env: Record<string, string> = {}): Promise<AuditDataset> {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const service = await startTestService({
    SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    INVITES_SENDING_ADDRESS: 'invites@checkin.test',
    ...env,
  });
  const ok = (reply: { status: number; body: any }, status = 200) => {
    if (reply.status !== status) throw new Error(`expected ${status}, got ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body;
  };
  const alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const { id: eventId } = ok(await alice.call('POST', '/checkin/v1/api/event', {
    title: 'Gala', startTime: '2026-11-01T18:00:00Z', endTime: '2026-11-01T23:00:00Z', timeZoneId: 'Europe/Berlin',
  }));
  const userName = `door-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const { id: teamMemberId } = ok(await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: 'door@example.com' }));
  const member = { authorization: `Bearer ${await passwordToken(service.url, userName, 'door staff pass 1')}`, 'ocp-apim-subscription-key': alice.subscriptionKey };
  const user = { authorization: `Bearer ${await passwordToken(service.url, alice.email, alice.password)}`, 'ocp-apim-subscription-key': alice.subscriptionKey };
  const { id: templateId } = ok(await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', subject: 'Hi {{firstName}}', html: '<p>Hi</p>' }));

  const { id: ann } = ok(await alice.call('POST', '/checkin/v1/api/guest', {
    eventId, firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com', customId: 'C-1', tags: 'VIP,press', plusOnes: 2, commsTemplateId: templateId,
  }));
  const { id: bo } = ok(await request(service.url, 'POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', lastName: 'Ng', email: 'bo@example.com', customId: 'C-2', barcode: 'BC-2' }, user));
  ok(await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [
    { customId: 'C-1', lastName: 'Lee-Smith', tags: 'vip' },
    { customId: 'C-3', firstName: 'Cy', lastName: 'Oz', email: 'cy@example.com', tags: 'staff' },
  ]), 204);
  const { id: cy } = ok(await alice.call('GET', `/checkin/v1/api/guest/C-3?eventId=${eventId}`));

  const invitation = await eventually(async () => {
    const reply = await alice.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${ann}`);
    return reply.body.items?.[0]?.status === 'sent' ? reply.body.items[0] : undefined;
  }, 30_000, "Ann's invitation sent");
  const report = { email: 'ann@example.com', timestamp: Math.floor(Date.now() / 1000), attendeeInvitationId: invitation.attendeeInvitationId };
  const posted = await postSendGridEvents(service.url, privateKey, [
    { ...report, event: 'delivered', sg_event_id: 'sg-1' },
    { ...report, event: 'open', sg_event_id: 'sg-2' },
  ]);
  if (posted.status !== 200) throw new Error(`provider report: ${posted.status} ${await posted.text()}`);

  const scan = async (direction: string, scanBody: unknown) => ok(await request(service.url, 'POST', `/checkin/v1/api/guests/${eventId}/${direction}`, scanBody, member));
  await scan('checkin', { guestId: ann, gate: 'A', device: 'p1', plusOnes: 1 });
  const boIn = await scan('checkin', { barcode: 'BC-2', gate: 'B' });
  await scan('checkout', { guestId: ann, gate: 'A' });
  await scan('checkin', { barcode: 'nobody', gate: 'B' });
  ok(await request(service.url, 'POST', `/checkin/v1/api/guests/${eventId}/checkin/undo`, { scanId: boIn.scanId }, member));
  ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [bo], reason: 'duplicate ticket' }));
  await scan('checkin', { barcode: 'BC-2', gate: 'B' });
  await new Promise((resolve) => setTimeout(resolve, 5));
  const beforeReissue = new Date().toISOString();
  await new Promise((resolve) => setTimeout(resolve, 5));
  ok(await alice.call('POST', `/checkin/v1/api/guest/${ann}/ticket/reissue`));
  ok(await alice.call('POST', `/checkin/v1/api/guest/${cy}/erase`, { reason: 'the guest asked' }));
  // Projections run behind the API: wait until the last fact is in the read models.
  await eventually(async () => (await alice.call('GET', `/checkin/v1/api/guest/${cy}`)).body?.erased === true || undefined, 60_000, 'erasure projected');
  await eventually(async () => (await alice.call('GET', `/comms/v1/api/comms/invitations/${invitation.attendeeInvitationId}`)).body?.opens === 1 || undefined, 60_000, 'open projected');
  await eventually(async () => (await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline`)).body?.totals?.annulled === 1 || undefined, 60_000, 'timeline projected');
  await eventually(async () => (await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`)).body?.totals?.checkedIn === 1 || undefined, 60_000, 'funnel projected');
  return { service, alice, bob, eventId, teamMemberId, templateId, ann, bo, cy, attendeeInvitationId: invitation.attendeeInvitationId, beforeReissue, sendGridKey: privateKey };
}

/** Every event in the store, in order. */
export async function allEvents(service: TestService): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  const head = await service.platform.eventStore.headPosition();
  for await (const batch of service.platform.eventStore.subscribeToAll({ fromPosition: -1, batchSize: 5000 })) {
    events.push(...batch.events);
    if (batch.position >= head) break;
  }
  return events;
}
