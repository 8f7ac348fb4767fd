/**
 * A person asking for their data (docs/personal-data.md, Access):
 * GET /checkin/v1/api/guest/{id}/personal-data answers everything held about the guest, by id
 * or by customId, and nothing of another guest or client.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
let service: TestService;
let alice: Client;
let bob: Client;
let receiver: Receiver;

beforeAll(async () => {
  service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test', WEBHOOK_ALLOW_INSECURE: 'true' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  receiver = await startReceiver({ fallback: 200 });
});
afterAll(async () => {
  await receiver?.close();
  await service?.close();
});

const ok = (reply: { status: number; body: any }) => {
  if (reply.status >= 300) throw new Error(`${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
};

describe('GET /guest/{id}/personal-data', () => {
  it('lists the door scans that looked up the guest’s barcode or customId before it had them, by id and by customId, and no one else’s', async () => {
    const tag = randomUUID().slice(0, 8);
    const [barcode, customId, unrelated] = [`BC-${tag}`, `CRM-${tag}`, `BC-${tag}-9`];
    const eventId = await newEvent(alice);
    const scan = (who: Client, event: string, body: Record<string, unknown>) => who.call('POST', `${api}/guests/${event}/checkin`, { gate: 'East', ...body }).then(ok);
    // Scanned before any guest had them: each matched no guest and was recorded with what it looked up.
    expect(await scan(alice, eventId, { barcode })).toMatchObject({ result: 'rejected', reason: 'not_found' });
    expect(await scan(alice, eventId, { guestId: customId.toLowerCase() })).toMatchObject({ result: 'rejected', reason: 'not_found' });
    expect(await scan(alice, eventId, { barcode: unrelated })).toMatchObject({ result: 'rejected', reason: 'not_found' });
    const bobsEvent = await newEvent(bob);
    expect(await scan(bob, bobsEvent, { barcode })).toMatchObject({ result: 'rejected', reason: 'not_found' });

    const id = ok(await alice.call('POST', `${api}/guest`, { eventId, firstName: 'Ann', barcode, customId })).id;
    expect(await scan(alice, eventId, { barcode })).toMatchObject({ result: 'admitted' });

    const byId = ok(await alice.call('GET', `${api}/guest/${id}/personal-data`));
    expect(byId.scans.map((s: any) => s.result)).toEqual(['admitted']);
    expect(byId.unmatchedScans.map((s: any) => s.lookup)).toEqual([{ barcode }, { guestId: customId.toLowerCase() }]);
    expect(byId.unmatchedScans.every((s: any) => s.eventId === eventId && s.reason === 'not_found' && s.gate === 'East')).toBe(true);
    expect(JSON.stringify(byId)).not.toContain(unrelated);
    // The same document by the customId (spec: usable instead of id).
    const byCustomId = ok(await alice.call('GET', `${api}/guest/${encodeURIComponent(customId)}/personal-data`));
    expect({ ...byCustomId, generatedAt: undefined }).toEqual({ ...byId, generatedAt: undefined });

    // Once the guest is erased, what the scans looked up is gone from its document too.
    ok(await alice.call('POST', `${api}/guest/${id}/erase`, { reason: 'request' }));
    const erased = ok(await alice.call('GET', `${api}/guest/${id}/personal-data`));
    expect(JSON.stringify(erased)).not.toContain(tag);
  });

  it('lists the comms events about the guest’s emails and where the webhook delivered them', async () => {
    const eventId = await newEvent(alice);
    ok(await alice.call('POST', `${comms}/webhook`, { url: receiver.url }));
    receiver.secret = ok(await alice.call('POST', `${comms}/webhook/rotate`)).secret;
    const templateId = ok(await alice.call('POST', `${comms}/template`, { eventId, name: 'Invitation', subject: 'Hi', html: '<p>Hi</p>' })).id;
    const ann = ok(await alice.call('POST', `${api}/guest`, { eventId, firstName: 'Ann', email: 'ann@example.com', commsTemplateId: templateId, correlationId: 'crm-1' })).id;
    const bo = ok(await alice.call('POST', `${api}/guest`, { eventId, firstName: 'Bo', email: 'bo@example.com', commsTemplateId: templateId })).id;
    const sentTo = await eventually(async () => {
      const attendees = receiver.deliveries.filter((d) => d.body.type === 'comms.sent').map((d) => d.body.data.attendeeId);
      return attendees.includes(ann) && attendees.includes(bo) ? attendees : undefined;
    }, 60_000, 'both comms.sent webhooks delivered');
    expect(sentTo).toContain(ann);
    const delivered = receiver.deliveries.find((d) => d.body.type === 'comms.sent' && d.body.data.attendeeId === ann)!;
    await eventually(async () => {
      const status = (await alice.call('GET', `${comms}/webhook/deliveries/${delivered.body.id}`)).body?.status;
      return status === 'delivered' ? status : undefined;
    }, 60_000, 'the delivery recorded as delivered');

    const access = ok(await alice.call('GET', `${api}/guest/${ann}/personal-data`));
    expect(access.commsEvents).toEqual([
      expect.objectContaining({
        id: delivered.body.id,
        type: 'comms.sent',
        createdAt: delivered.body.createdAt,
        data: delivered.body.data,
        delivery: expect.objectContaining({ status: 'delivered', attempts: 1, attemptLog: [expect.objectContaining({ url: receiver.url, statusCode: 200 })] }),
      }),
    ]);
    expect(access.commsEvents[0].data).toMatchObject({ attendeeId: ann, correlationId: 'crm-1' });
    expect(JSON.stringify(access)).not.toContain(bo);
  });
});
