/**
 * The comms history read models (`comms_events`: the reconciliation feed; `webhook_deliveries`:
 * the delivery log) keep COMMS_HISTORY_RETENTION_DAYS (default 30): older entries go, newer ones
 * stay, a delivery still being retried stays whatever its age, and a bus message about a pruned
 * delivery's comms event that comes again is still deduplicated (the event store decides, not the
 * read model). Before, both grew with every email ever sent, in the api process's memory on the
 * embedded read store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneCommsHistory } from '../../src/commands/comms-history-retention.js';
import { deliveryStream } from '../../src/domain/webhook.js';
import { loadConfig } from '../../src/config.js';
import type { CommsEventDoc, DeliveryDoc } from '../../src/projections/webhooks.js';
import { toMessage } from '../../src/workers/event-message.js';
import { topics } from '../../src/workers/topics.js';
import { dispatcherGroup } from '../../src/workers/webhook-dispatcher.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from './receiver.js';

const api = '/comms/v1/api/comms';
const DAY = 86_400_000;
/** The service's clock: real time, moved forward by the test. */
let offsetMs = 0;
const clock = { now: () => new Date(Date.now() + offsetMs) };

let service: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  // A retry an hour away: a failed first attempt stays `retrying` through the test.
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '3600000' }, { clock });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
});

async function clientWithReceiver(answer: number): Promise<{ client: Client; receiver: Receiver }> {
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const receiver = await startReceiver({ fallback: answer });
  receivers.push(receiver);
  const configured = await client.call('POST', `${api}/webhook`, { url: receiver.url });
  expect(configured.status).toBe(200);
  receiver.secret = configured.body.secret;
  return { client, receiver };
}

async function testDelivery(client: Client, status: string): Promise<string> {
  const test = await client.call('POST', `${api}/webhook/test`);
  expect(test.status).toBe(200);
  const id = test.body.webhookId as string;
  await eventually(async () => {
    const reply = await client.call('GET', `${api}/webhook/deliveries/${id}`);
    return reply.status === 200 && reply.body.status === status;
  }, 10_000, `delivery ${id} ${status}`);
  return id;
}

const deliveries = () => service.platform.readStore.collection<DeliveryDoc>('webhook_deliveries');
const commsEvents = () => service.platform.readStore.collection<CommsEventDoc>('comms_events');

describe('comms history retention (COMMS_HISTORY_RETENTION_DAYS)', () => {
  it('deletes comms events and finished deliveries older than the window, keeps newer ones and one still retried, and a repeated bus message schedules nothing', async () => {
    const { client: ann, receiver: annReceiver } = await clientWithReceiver(200);
    const { client: bob } = await clientWithReceiver(503);
    const oldDelivered = await testDelivery(ann, 'delivered');
    const oldRetrying = await testDelivery(bob, 'retrying');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const between = new Date();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const newDelivered = await testDelivery(ann, 'delivered');
    const sourceEventId = (await deliveries().get(oldDelivered))!.sourceEventId;

    // 30 days after `between`: the first deliveries are past the window, the last one is not.
    const deleted = await pruneCommsHistory(service.platform.readStore, { days: 30 }, new Date(between.getTime() + 30 * DAY));
    expect(deleted).toEqual({ commsEvents: 2, deliveries: 1 });
    expect(await deliveries().get(oldDelivered)).toBeNull();
    expect(await commsEvents().get(oldDelivered)).toBeNull();
    expect(await commsEvents().get(oldRetrying)).toBeNull();
    // Still being retried: kept, whatever its age (the executor resumes from this document).
    expect((await deliveries().get(oldRetrying))?.status).toBe('retrying');
    expect((await deliveries().get(newDelivered))?.status).toBe('delivered');
    expect(await commsEvents().get(newDelivered)).not.toBeNull();
    const feed = await ann.call('GET', `${api}/events`);
    expect(feed.status).toBe(200);
    expect(feed.body.items.map((e: { id: string }) => e.id)).toEqual([newDelivered]);
    expect((await ann.call('GET', `${api}/webhook/deliveries/${oldDelivered}`)).status).toBe(404);

    // The pruned delivery's comms event comes again on the bus (a redelivered message, a replay):
    // the delivery's stream says it was scheduled, so nothing is scheduled or sent again.
    const streamBefore = await service.platform.eventStore.readStream(deliveryStream(oldDelivered));
    const [source] = (await service.platform.eventStore.readStream(`webhook-${ann.id}`)).filter((e) => e.id === sourceEventId);
    expect(source).toBeDefined();
    await service.platform.bus.publish(topics.commsEvents, [toMessage(source!)]);
    await eventually(async () => {
      const lag = await service.platform.bus.consumerLag(dispatcherGroup, [topics.commsEvents]);
      return lag.every((t) => t.messages === 0);
    }, 60_000, 'the dispatcher took the repeated message');
    expect(await service.platform.eventStore.readStream(deliveryStream(oldDelivered))).toHaveLength(streamBefore.length);
    expect(annReceiver.deliveries).toHaveLength(2);
    expect(await deliveries().get(oldDelivered)).toBeNull();

    // A delivery the log no longer shows is not redelivered (as one never made is not); one it shows is.
    offsetMs = 31 * DAY;
    try {
      expect((await ann.call('POST', `${api}/webhook/deliveries/${oldDelivered}/redeliver`)).status).toBe(404);
      // Refused before anything was recorded: no redelivery goes out behind the 404.
      expect(await service.platform.eventStore.readStream(deliveryStream(oldDelivered))).toHaveLength(streamBefore.length);
      expect((await ann.call('POST', `${api}/webhook/deliveries/${newDelivered}/redeliver`)).status).toBe(200);
    } finally {
      offsetMs = 0;
    }
  });

  it('keeps the history for ever with 0', async () => {
    const { client } = await clientWithReceiver(200);
    const id = await testDelivery(client, 'delivered');
    expect(await pruneCommsHistory(service.platform.readStore, { days: 0 }, new Date(Date.now() + 10_000 * DAY))).toEqual({ commsEvents: 0, deliveries: 0 });
    expect(await deliveries().get(id)).not.toBeNull();
  });
});

describe('COMMS_HISTORY_RETENTION_DAYS in the configuration', () => {
  it('defaults to 30 days and takes 0 (for ever)', () => {
    expect(loadConfig({}).commsHistoryRetentionDays).toBe(30);
    expect(loadConfig({ COMMS_HISTORY_RETENTION_DAYS: '0' }).commsHistoryRetentionDays).toBe(0);
    expect(loadConfig({ COMMS_HISTORY_RETENTION_DAYS: '1' }).commsHistoryRetentionDays).toBe(1);
  });

  it('refuses a window no longer than the webhook retry schedule', () => {
    expect(() => loadConfig({ COMMS_HISTORY_RETENTION_DAYS: '1', WEBHOOK_RETRY_DELAYS_MS: '86400000,3600000' })).toThrow(/COMMS_HISTORY_RETENTION_DAYS must be longer than the webhook retry schedule/);
    expect(() => loadConfig({ COMMS_HISTORY_RETENTION_DAYS: 'week' })).toThrow(/COMMS_HISTORY_RETENTION_DAYS/);
  });
});
