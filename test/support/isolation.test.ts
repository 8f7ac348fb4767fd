/**
 * Test services on the shared real servers keep apart (test/support/service.ts, sharedServerNames):
 * CI runs every file against ONE Kafka broker and ONE MongoDB-protocol server, files in parallel.
 * Two services given KAFKA_BROKERS without KAFKA_NAMESPACE shared the consumer groups
 * `send-worker` and `webhook-dispatcher`: Kafka split the partitions between them, and a webhook
 * of one went to the other's dispatcher, which had no such webhook (test/e2e/real-servers.test.ts,
 * run twice at once, failed "receiver got 0 deliveries").
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { KafkaBus } from '../../src/adapters/bus/kafka.js';
import { commsApi } from './flows.js';
import { realServer } from './real-servers.js';
import { startSendGridDouble } from './sendgrid-double.js';
import { createClient, sharedServerNames, startTestService, type TestService } from './service.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

describe('names on the shared servers (no server needed)', () => {
  it('gives each data folder its own Kafka namespace and MongoDB database, the same again for the same folder', () => {
    const servers = { KAFKA_BROKERS: '127.0.0.1:1', MONGO_URL: 'mongodb://127.0.0.1:1/' };
    const one = sharedServerNames(servers, '/tmp/checkin-test-a1B2c3');
    const two = sharedServerNames(servers, '/tmp/checkin-test-d4E5f6');
    expect(one.KAFKA_NAMESPACE).toMatch(/^test-[0-9a-f]{12}$/);
    expect(one.MONGO_DB).toMatch(/^test_[0-9a-f]{12}$/);
    expect(two.KAFKA_NAMESPACE).not.toBe(one.KAFKA_NAMESPACE);
    expect(two.MONGO_DB).not.toBe(one.MONGO_DB);
    // A restart (or another role) on the same data folder finds its topics, offsets and read models.
    expect(sharedServerNames(servers, '/tmp/checkin-test-a1B2c3')).toEqual(one);
    // Names the test gives are kept, the plain ones included; no server, no names.
    expect(sharedServerNames({ ...servers, KAFKA_NAMESPACE: '', MONGO_DB: 'chosen' }, '/tmp/x')).toEqual({});
    expect(sharedServerNames({}, '/tmp/x')).toEqual({});
  });

  it('starts the service under them: its consumer groups are not the plain ones', async () => {
    // Nothing answers on port 1: the service starts all the same (/readyz 503).
    const service = await startTestService({ KAFKA_BROKERS: '127.0.0.1:1' });
    try {
      expect(service.platform.bus.kind).toBe('kafka');
      const name = (service.platform.bus as KafkaBus).serverName('send-worker');
      expect(name).toBe(`${service.env.KAFKA_NAMESPACE}.send-worker`);
      expect(name).toBe(`${sharedServerNames({ KAFKA_BROKERS: '127.0.0.1:1' }, service.dataDir).KAFKA_NAMESPACE}.send-worker`);
    } finally {
      await service.close();
    }
  }, 60_000);
});

describe('a webhook receiver on a port another file used', () => {
  it('counts only requests to its own path: a delivery another service still retries to that port is not one', async () => {
    const receiver = await startReceiver({ secret: 's' });
    try {
      const { origin } = new URL(receiver.url);
      // What a service whose receiver closed (port released, then handed to this one) still sends.
      const stray = await fetch(`${origin}/hook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"comms.test"}' });
      expect(stray.status).toBe(404);
      expect(receiver.deliveries).toEqual([]);
      const own = await fetch(receiver.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"comms.test"}' });
      expect(own.status).toBe(401); // unsigned: counted, and refused as the spec says
      expect(receiver.deliveries).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});

describe('a SendGrid double on a port another file used', () => {
  it("refuses another key before it takes a failure scripted for this test's sender", async () => {
    const double = await startSendGridDouble();
    try {
      double.failNext(500);
      const send = (key: string) =>
        fetch(`${double.url}/v3/mail/send`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{}' });
      expect((await send('SG.another-file')).status).toBe(401);
      expect((await send(double.apiKey)).status).toBe(500);
    } finally {
      await double.close();
    }
  });
});

const kafka = await realServer('kafka');
afterAll(() => kafka.stop());

if (!kafka.url) {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`two services on one broker (skipped: ${kafka.skipReason})`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
} else {
  describe('two services on one broker (real broker)', () => {
    const services: TestService[] = [];
    const receivers: Receiver[] = [];
    afterAll(async () => {
      await Promise.allSettled(receivers.map((receiver) => receiver.close()));
      await Promise.allSettled(services.map((service) => service.close()));
    });

    it("each service's webhooks reach its own receivers: none is handled by the other's dispatcher", async () => {
      const env = { KAFKA_BROKERS: kafka.url!, WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '50,50,50' };
      services.push(await startTestService(env), await startTestService(env));
      // Four accounts on each: their webhook streams spread over the topic's partitions, so a
      // shared group would hand some of them to the other service (all eight stay only by luck, 1 in 256).
      const sent: Receiver[] = [];
      for (const service of services) {
        for (let i = 0; i < 4; i++) {
          const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
          const receiver = await startReceiver();
          receivers.push(receiver);
          const configured = await client.call('POST', `${commsApi}/webhook`, { url: receiver.url });
          receiver.secret = configured.body.secret;
          expect((await client.call('POST', `${commsApi}/webhook/test`)).status).toBeLessThan(300);
          sent.push(receiver);
        }
      }
      // Hang guard: a webhook handled by the other service's dispatcher never arrives.
      const arrived = await Promise.all(sent.map((receiver) => receiver.waitFor(1, 60_000)));
      for (const [delivery] of arrived) {
        expect(delivery!.body.type).toBe('comms.test');
        expect(delivery!.specVerified).toBe(true);
      }
    }, 150_000);
  });
}
