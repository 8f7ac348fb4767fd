import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { specVerify } from './receiver.js';

/**
 * The webhook configuration changed while a delivery is in flight (docs/webhooks.md, Delivery
 * behaviour): the receiver switches to the secret the rotate answered, and answers 401 to the
 * attempt signed with the old one. That attempt must not end the delivery.
 */
let service: TestService;
let alice: Client;
const api = '/comms/v1/api/comms';

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '20,20,20' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

/** A receiver that holds the first request until `release()`, and checks every signature against `secret` when it answers. */
async function gatedReceiver() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const answers: number[] = [];
  let arrived!: () => void;
  const firstArrived = new Promise<void>((resolve) => (arrived = resolve));
  const state = { secret: '', answers, release, firstArrived };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (answers.length === 0) {
        answers.push(-1);
        arrived();
        await released;
        answers.pop();
      }
      const ok = specVerify(Buffer.concat(chunks), req.headers['x-service-signature'] as string | undefined, state.secret);
      answers.push(ok ? 200 : 401);
      res.statusCode = ok ? 200 : 401;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('a rotate while a delivery is in flight', () => {
  it('the attempt signed with the old secret, refused with 401 by the receiver now on the new one, is retried and delivered', async () => {
    const receiver = await gatedReceiver();
    try {
      const created = await alice.call('POST', `${api}/webhook`, { url: receiver.url });
      expect(created.status).toBe(200);
      receiver.state.secret = created.body.secret;
      expect((await alice.call('POST', `${api}/webhook/test`)).status).toBeLessThan(300);
      await receiver.state.firstArrived;
      // The integrator rotates and deploys the new secret while the first attempt waits for its answer.
      const rotated = await alice.call('POST', `${api}/webhook/rotate`);
      expect(rotated.status).toBe(200);
      receiver.state.secret = rotated.body.secret;
      receiver.state.release();
      let delivery: Record<string, any> | undefined;
      for (let i = 0; i < 500; i++) {
        const list = await alice.call('GET', `${api}/webhook/deliveries?type=comms.test`);
        delivery = list.body.items?.[0];
        if (delivery && !['pending', 'retrying'].includes(delivery.status)) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(receiver.state.answers[0]).toBe(401);
      expect(delivery?.status).toBe('delivered');
      expect(receiver.state.answers.at(-1)).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it('an answer 401 with the secret unchanged stays final (a receiver that refuses is not retried)', async () => {
    const receiver = await gatedReceiver();
    try {
      const bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
      const created = await bob.call('POST', `${api}/webhook`, { url: receiver.url });
      receiver.state.secret = 'whsec_not_the_one';
      expect((await bob.call('POST', `${api}/webhook/test`)).status).toBeLessThan(300);
      await receiver.state.firstArrived;
      expect(created.status).toBe(200);
      receiver.state.release();
      let delivery: Record<string, any> | undefined;
      for (let i = 0; i < 500; i++) {
        delivery = (await bob.call('GET', `${api}/webhook/deliveries?type=comms.test`)).body.items?.[0];
        if (delivery && !['pending', 'retrying'].includes(delivery.status)) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(delivery?.status).toBe('failed');
      expect(receiver.state.answers).toEqual([401]);
    } finally {
      await receiver.close();
    }
  });
});
