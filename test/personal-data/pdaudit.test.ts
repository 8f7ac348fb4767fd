/**
 * A data-protection audit of what the service writes about a guest (docs/personal-data.md): the
 * places the main grep test's guest never reaches. A block reason that names the guest is
 * repeated in each of its rejected scans; the suppression list keeps the guest's address with
 * the provider's verdict, and the access document must answer it.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type TestService } from '../support/service.js';
import { filesHolding } from '../support/files-holding.js';
import { eventually } from '../webhooks/receiver.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    INVITES_SENDING_ADDRESS: 'invites@checkin.test',
  });
});
afterAll(async () => {
  await service?.close();
});

/** Read-model and other files only: the event store keeps block reasons as written (docs/personal-data.md). */
const outsideEventStore = (needles: string[]) => filesHolding(service.dataDir, needles).filter((file) => !file.startsWith('events.sqlite'));

describe('a block reason that names the guest', () => {
  it('is replaced in the guest’s scans by its erasure, as in the guest document', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const tag = randomUUID().slice(0, 8);
    const lastName = `Marchbanks${tag}`;
    const barcode = `BLK-${tag}`;
    const created = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Ann', lastName, barcode });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const guestId = created.body.id as string;
    const blocked = await client.call('POST', `${api}/guests/${eventId}/block`, { ids: [guestId], reason: `${lastName} shouted at the door staff` });
    expect(blocked.status, JSON.stringify(blocked.body)).toBe(200);
    const scan = await client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode, gate: 'North' });
    expect(scan.body).toMatchObject({ result: 'rejected', reason: 'blocked' });
    // The scan's row repeats what door staff were told.
    const scans = async () => JSON.stringify((await client.call('GET', `${api}/event/${eventId}/scans`)).body);
    await eventually(async () => (await scans()).includes(lastName), 30_000, 'the rejected scan in the scans read model');

    const erased = await client.call('POST', `${api}/guest/${guestId}/erase`, { reason: 'art. 17' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(await scans()).not.toContain(lastName);
    // The reason is sealed with the guest's key in the events since pdgaps, so erasure removes it from the scans (as a rebuild writes them).
    expect(await scans()).toContain('"reason":"blocked"');
    expect(await scans()).not.toContain('blockedReason');
    expect(outsideEventStore([lastName, barcode])).toEqual([]);
  }, 90_000);
});

describe('the suppression list', () => {
  const report = (events: unknown[]) => postSendGridEvents(service.url, privateKey, events);

  it('holds a bounced guest’s address, and the access document answers that entry', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = await newEvent(client);
    const template = await client.call('POST', `${comms}/template`, { eventId, name: 'Pass', subject: 'Your pass', html: '<p>Hello {{firstName}}</p>' });
    const email = `bounce.${randomUUID().slice(0, 8)}@example.com`;
    const guest = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Bo', email, commsTemplateId: template.body.id });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);
    const guestId = guest.body.id as string;
    // Hang guard only, far above any real figure.
    const invitation = await eventually(async () => {
      const [item] = (await client.call('GET', `${comms}/invitations?attendeeId=${guestId}`)).body.items;
      return item?.status === 'sent' ? item : undefined;
    }, 30_000, 'invitation sent');
    const reply = await report([
      { email, timestamp: Math.floor(Date.now() / 1000), attendeeInvitationId: invitation.attendeeInvitationId, event: 'bounce', sg_event_id: `ev-${randomUUID()}`, reason: '550 5.1.1 mailbox unknown' },
    ]);
    expect(reply.status).toBe(200);
    await eventually(async () => {
      const refused = await client.call('POST', `${comms}/send`, { templateId: template.body.id, attendeeIds: [guestId] });
      return refused.status === 422 ? refused : undefined;
    }, 30_000, 'the address suppressed');

    const access = await client.call('GET', `${api}/guest/${guestId}/personal-data`);
    expect(access.status, JSON.stringify(access.body)).toBe(200);
    expect(access.body.suppressions).toEqual([{ email, reason: 'bounced', at: expect.any(String) }]);

    const erased = await client.call('POST', `${api}/guest/${guestId}/erase`, { reason: 'art. 17' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(filesHolding(service.dataDir, [email])).toEqual([]);
  }, 90_000);
});
