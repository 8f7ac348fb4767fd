/**
 * Erasure and the client's webhook delivery log (docs/personal-data.md): the log keeps the
 * client's own endpoint. The test receiver listens on a random port, and a guest's numeric
 * customId (a CRM's) can be inside it by chance: the URL was then turned into `[erased]`.
 * Here the colliding value is forced (the customId is the port).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
let service: TestService;
let alice: Client;
let receiver: Receiver;

beforeAll(async () => {
  service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test', WEBHOOK_ALLOW_INSECURE: 'true' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
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

describe('erasing a guest whose customId is inside the webhook endpoint URL (its port)', () => {
  it('keeps the URL of every delivery attempt in the client’s delivery log', async () => {
    ok(await alice.call('POST', `${comms}/webhook`, { url: receiver.url }));
    receiver.secret = ok(await alice.call('POST', `${comms}/webhook/rotate`)).secret;
    const port = new URL(receiver.url).port;
    const eventId = await newEvent(alice);
    const templateId = ok(await alice.call('POST', `${comms}/template`, { eventId, name: 'Invitation', subject: 'Hi', html: '<p>Hi</p>' })).id;
    const guestId = ok(await alice.call('POST', `${api}/guest`, { eventId, firstName: 'Portia', email: 'portia@example.com', customId: port, commsTemplateId: templateId })).id;
    const sent = await eventually(async () => receiver.deliveries.find((d) => d.body.type === 'comms.sent' && d.body.data.attendeeId === guestId), 60_000, 'comms.sent delivered');
    const delivery = () => alice.call('GET', `${comms}/webhook/deliveries/${sent.body.id}`).then(ok);
    const before = await eventually(async () => {
      const found = await delivery();
      return found.status === 'delivered' ? found : undefined;
    }, 60_000, 'the delivery recorded as delivered');
    expect(before.attemptLog).toEqual([expect.objectContaining({ url: receiver.url, statusCode: 200 })]);

    ok(await alice.call('POST', `${api}/guest/${guestId}/erase`, { reason: 'request' }));

    const after = await delivery();
    expect(after.attemptLog).toEqual(before.attemptLog);
    expect(JSON.stringify(after)).not.toContain('[erased]');
    // The guest's own values are gone.
    expect(ok(await alice.call('GET', `${api}/guest/${guestId}`))).toMatchObject({ erased: true, customId: null, email: null });
  });
});
