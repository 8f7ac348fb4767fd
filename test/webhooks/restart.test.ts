import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientToken, createClient, request, startTestService } from '../support/service.js';
import { eventually, startReceiver } from './receiver.js';

const api = '/comms/v1/api/comms';
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-webhook-restart-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('the dispatcher across a restart', () => {
  it('resumes a delivery whose attempt was cut off by a stop, with the same webhook id and a secret still readable', async () => {
    const env = { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '20,20' };
    const receiver = await startReceiver({ answers: ['hang'] });
    let service = await startTestService(env, { dataDir });
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const configured = await client.call('POST', `${api}/webhook`, { url: receiver.url });
    receiver.secret = configured.body.secret;
    const test = await client.call('POST', `${api}/webhook/test`);
    await receiver.waitFor(1);
    await service.close();
    // The stop abandoned the attempt in flight: nothing was recorded for it.
    expect(fs.existsSync(path.join(dataDir, 'webhooks', 'encryption-keys.json'))).toBe(true);

    service = await startTestService(env, { dataDir });
    try {
      const [, resumed] = await receiver.waitFor(2);
      expect(resumed!.headers['x-service-webhook-id']).toBe(test.body.webhookId);
      expect(resumed!.specVerified).toBe(true);
      // The signing key of the dev identity provider survived too: a new token, same client.
      const token = await clientToken(service.url, client.id, client.clientSecret);
      const headers = { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey };
      const delivery = await eventually(async () => {
        const reply = await request(service.url, 'GET', `${api}/webhook/deliveries/${test.body.webhookId}`, undefined, headers);
        return reply.body.status === 'delivered' ? reply.body : undefined;
      });
      expect(delivery.attempts).toBe(1);
    } finally {
      await service.close();
      await receiver.close();
    }
  });
});
