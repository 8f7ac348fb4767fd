/**
 * An event too large for the bus (a Kafka topic's max.message.bytes) must not stall the relay:
 * it goes out without its data (`x-data-omitted: too-large`), and the consumers in the service
 * read the whole event from the event store. The relay part runs on the real broker (the refusal
 * is the broker's); the consumers' part on the embedded bus, with the reference form published by hand.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage, Consumer } from '../../src/adapters/bus/port.js';
import { guestStream } from '../../src/domain/guest.js';
import { webhookStream } from '../../src/domain/webhook.js';
import { dataOmittedHeader, eventOfMessage, fromMessage, toMessage } from '../../src/workers/event-message.js';
import { topics } from '../../src/workers/topics.js';
import { readOutbox } from '../support/mail-readers.js';
import { realServer } from '../support/real-servers.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

const comms = '/comms/v1/api/comms';
/** customData of 1.5 MB: under the 5 MB body limit, over Kafka's default 1,048,588-byte batch limit. */
const hugeCustomData = 'x'.repeat(1_500_000);
const occasion = (overrides: Record<string, unknown> = {}) => ({ title: 'Size', startTime: '2026-12-01T10:00:00Z', endTime: '2026-12-01T12:00:00Z', ...overrides });

describe('event messages without their data (embedded bus)', () => {
  let service: TestService;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
    // Only the hand-published reference reaches the consumers below, never the relay's whole message.
    await service.relay!.stop();
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await service.close();
  });

  it('toMessage leaves data out above maxBytes, keeping ids, type, position, stream, revision and metadata; eventOfMessage reads it back', async () => {
    const client = await createClient(service);
    const created = await client.call('POST', '/checkin/v1/api/event', occasion({ customData: 'c'.repeat(5_000) }));
    const [stored] = await service.platform.eventStore.readStream(`event-${client.id}:${created.body.id}`);
    const whole = toMessage(stored!, { maxBytes: 1_000_000 });
    expect(whole.headers![dataOmittedHeader]).toBeUndefined();
    expect(fromMessage(whole.value)).toEqual(stored);
    const reference = toMessage(stored!, { maxBytes: 4_096 });
    expect(reference.key).toBe(stored!.streamName);
    expect(reference.headers).toMatchObject({
      [dataOmittedHeader]: 'too-large',
      'event-id': stored!.id,
      'event-type': 'EventCreated',
      'event-position': String(stored!.position),
      'tenant-id': client.id,
    });
    const { data: _data, ...withoutData } = stored!;
    expect(JSON.parse(reference.value)).toEqual(withoutData);
    const busMessage = { value: reference.value, headers: reference.headers! };
    expect(await eventOfMessage(busMessage, service.platform.eventStore)).toEqual(stored);
    // A reference to an event the store does not hold at that revision is an error that says so.
    const elsewhere = { ...busMessage, value: JSON.stringify({ ...withoutData, revision: 7 }) };
    await expect(eventOfMessage(elsewhere, service.platform.eventStore)).rejects.toThrow(/published without its data and is not in the event store/);
  });

  it('the send worker sends the invitation of an InvitationRequested published without its data', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = (await client.call('POST', '/checkin/v1/api/event', occasion())).body.id as string;
    const template = await client.call('POST', `${comms}/template`, { eventId, name: 'Invite', subject: 'Hello {{firstName}}', html: '<p>Dear {{fullName}}</p>' });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Omi', email: 'omitted-data@example.com', commsTemplateId: template.body.id });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);
    const requested = (await service.platform.eventStore.readStream(guestStream(client.id, guest.body.id))).find((e) => e.type === 'InvitationRequested')!;
    await service.platform.bus.publish(topics.invitations, [toMessage(requested, { maxBytes: 1 })]);
    // Hang guard far above a send (a loaded machine took 12 s for a PDF render).
    const mails = await eventually(async () => {
      const found = (await readOutbox(path.join(service.dataDir, 'outbox'))).filter((m) => m.to.email === 'omitted-data@example.com');
      return found.length > 0 ? found : undefined;
    }, 60_000, 'the invitation email');
    expect(mails).toHaveLength(1);
  }, 90_000);

  it('the webhook dispatcher delivers a comms event published without its data', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const receiver = await startReceiver();
    receivers.push(receiver);
    const configured = await client.call('POST', `${comms}/webhook`, { url: receiver.url });
    receiver.secret = configured.body.secret;
    expect((await client.call('POST', `${comms}/webhook/test`, { correlationId: 'omitted-data' })).status).toBeLessThan(300);
    const history = await service.platform.eventStore.readStream(webhookStream(client.id));
    const requested = history[history.length - 1]!;
    expect(requested.type).toBe('WebhookTestRequested');
    await service.platform.bus.publish(topics.commsEvents, [toMessage(requested, { maxBytes: 1 })]);
    const [delivery] = await receiver.waitFor(1, 30_000);
    expect(delivery!.specVerified).toBe(true);
    expect(delivery!.body).toMatchObject({ type: 'comms.test', data: { correlationId: 'omitted-data' } });
  }, 60_000);
});

const kafka = await realServer('kafka');
afterAll(() => kafka.stop());

if (!kafka.url) {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`relay of an event larger than Kafka accepts (skipped: ${kafka.skipReason}; the refusal is the broker's)`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
} else {
  describe('relay of an event larger than Kafka accepts (real broker)', () => {
    let service: TestService;
    let client: Client;
    let receiver: Receiver;
    const consumers: Consumer[] = [];
    beforeAll(async () => {
      service = await startTestService({ KAFKA_BROKERS: kafka.url!, WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '50,50,50' });
      client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
      receiver = await startReceiver();
    }, 120_000);
    afterAll(async () => {
      await Promise.allSettled(consumers.map((c) => c.close()));
      await receiver?.close();
      await service?.close();
    });

    it('publishes it without its data, and every later event (same stream, other streams, other topics) still goes out', async () => {
      expect(service.platform.bus.kind).toBe('kafka');
      const big = await client.call('POST', '/checkin/v1/api/event', occasion({ title: 'Huge', customData: hugeCustomData }));
      expect(big.status).toBe(200);
      await client.call('POST', '/checkin/v1/api/event', occasion({ id: big.body.id, title: 'Huge, trimmed', customData: 'small' }));
      const small = await client.call('POST', '/checkin/v1/api/event', occasion({ title: 'Small' }));
      const bigStream = `event-${client.id}:${big.body.id}`;
      const smallStream = `event-${client.id}:${small.body.id}`;

      const seen: BusMessage[] = [];
      consumers.push(
        await service.platform.bus.consume({ groupId: `relay-size-${client.id}`, topics: [topics.eventChanges], fromBeginning: true }, async (message) => {
          if (message.key === bigStream || message.key === smallStream) seen.push(message);
        }),
      );
      // Hang guard: before the fix the relay retried the refused batch forever and nothing after it arrived.
      await eventually(async () => (seen.length >= 3 ? true : undefined), 60_000, 'the three events on checkin.events.v1');

      const [reference, update] = seen.filter((m) => m.key === bigStream);
      expect(reference!.headers).toMatchObject({ [dataOmittedHeader]: 'too-large', 'event-type': 'EventCreated' });
      const published = fromMessage(reference!.value);
      expect(published).not.toHaveProperty('data');
      expect(published).toMatchObject({ type: 'EventCreated', streamName: bigStream, revision: 0, id: reference!.headers['event-id'] });
      const whole = await eventOfMessage(reference!, service.platform.eventStore);
      expect((whole.data as { customData: string }).customData).toHaveLength(hugeCustomData.length);
      expect(update!.headers[dataOmittedHeader]).toBeUndefined();
      expect(fromMessage(update!.value).data).toMatchObject({ title: 'Huge, trimmed' });
      const [smallMessage] = seen.filter((m) => m.key === smallStream);
      expect(fromMessage(smallMessage!.value).data).toMatchObject({ title: 'Small' });

      // Another relayed topic after it: a webhook test goes through comms.events.v1 to the receiver.
      const configured = await client.call('POST', `${comms}/webhook`, { url: receiver.url });
      receiver.secret = configured.body.secret;
      expect((await client.call('POST', `${comms}/webhook/test`)).status).toBeLessThan(300);
      const [delivery] = await receiver.waitFor(1, 60_000);
      expect(delivery!.body.type).toBe('comms.test');
    }, 150_000);
  });
}
