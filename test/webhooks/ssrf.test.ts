import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { WebhookSender } from '../../src/workers/webhook-sender.js';
import { startReceiver } from './receiver.js';

/** Production rules: WEBHOOK_ALLOW_INSECURE unset (DESIGN.md section 6). */
let service: TestService;
let client: Client;

beforeAll(async () => {
  service = await startTestService({});
  client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const api = '/comms/v1/api/comms';

describe('webhook URL rules at configuration (SSRF)', () => {
  const refused = [
    'http://example.com/hook',
    'https://127.0.0.1/hook',
    'https://127.1.2.3:8443/hook',
    'https://10.0.0.1/hook',
    'https://172.16.5.4/hook',
    'https://192.168.1.1/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://0.0.0.0/hook',
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://[::ffff:169.254.169.254]/hook',
    'https://[fd00:ec2::254]/hook',
    'https://[fe80::1]/hook',
    'https://localhost/hook',
    'https://localhost:8443/hook',
    'https://2130706433/hook', // 127.0.0.1 written as a number
    'https://0x7f.0.0.1/hook',
  ];

  it.each(refused)('refuses %s with 400 validation_error on url', async (url) => {
    const reply = await client.call('POST', `${api}/webhook`, { url });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation_error');
    expect(reply.body.errors[0].path).toBe('url');
    expect((await client.call('GET', `${api}/webhook`)).status).toBe(404);
  });

  it('takes a receiver by DNS name only: an IP address, even a public one, is refused on url', async () => {
    const reply = await client.call('POST', `${api}/webhook`, { url: 'https://93.184.215.14/hooks/comms' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors?.[0]?.path).toBe('url');
    expect(reply.body.errors?.[0]?.message).toContain('DNS name');
  });

  it('takes an internationalised host name in its ASCII form, and names that form when given the Unicode one', async () => {
    const unicode = await client.call('POST', `${api}/webhook`, { url: 'https://bücher.example.invalid/hooks' });
    expect(unicode.status).toBe(400);
    expect(unicode.body.errors?.[0]?.message).toContain('xn--');
    const ascii = await client.call('POST', `${api}/webhook`, { url: 'https://xn--bcher-kva.example.invalid/hooks' });
    expect(ascii.status).toBe(200);
    expect(ascii.body.url).toBe('https://xn--bcher-kva.example.invalid/hooks');
    await client.call('POST', `${api}/webhook/delete`);
  });
});

describe('webhook URL scheme', () => {
  it('takes HTTPS:// in any case (schemes are case-insensitive) and stores the URL in its normal form', async () => {
    // `.invalid` never resolves: a host that does not resolve yet is accepted (docs/webhooks.md, URL rules).
    const reply = await client.call('POST', `${api}/webhook`, { url: 'HTTPS://Hooks.Example.invalid/comms' });
    expect(reply.status).toBe(200);
    expect(reply.body.url).toBe('https://hooks.example.invalid/comms');
    expect((await client.call('GET', `${api}/webhook`)).body.url).toBe('https://hooks.example.invalid/comms');
    expect((await client.call('POST', `${api}/webhook`, { url: 'HTTP://hooks.example.invalid/comms' })).status).toBe(400);
    await client.call('POST', `${api}/webhook/delete`);
  });
});

describe('webhook URL rules at delivery, after DNS resolution', () => {
  it('refuses a host that now resolves to a private address, without connecting, as a final outcome', async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      const sender = new WebhookSender({
        policy: { allowInsecure: false },
        resolver: async () => [{ address: '127.0.0.1', family: 4 }],
        timeoutMs: 2000,
      });
      const outcome = await sender.send({
        url: `https://rebinding.example:${port}/hook`,
        body: '{}',
        secret: 's',
        webhookId: 'w',
        eventType: 'comms.test',
        unixTime: Math.floor(Date.now() / 1000),
      });
      sender.close();
      expect(outcome).toMatchObject({ kind: 'error', retryable: false });
      expect(outcome.kind === 'error' && outcome.error).toContain('127.0.0.1');
      expect(receiver.deliveries).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });

  it('connects to exactly the address it checked (no second DNS answer), keeping the host name', async () => {
    const receiver = await startReceiver({ secret: 's' });
    try {
      const port = new URL(receiver.url).port;
      let lookups = 0;
      const sender = new WebhookSender({
        policy: { allowInsecure: true },
        resolver: async () => {
          lookups += 1;
          return [{ address: '127.0.0.1', family: 4 }];
        },
        timeoutMs: 2000,
      });
      const outcome = await sender.send({
        url: `http://receiver.invalid:${port}${new URL(receiver.url).pathname}`,
        body: '{"id":"x"}',
        secret: 's',
        webhookId: 'w',
        eventType: 'comms.test',
        unixTime: Math.floor(Date.now() / 1000),
      });
      sender.close();
      expect(outcome).toEqual({ kind: 'response', statusCode: 200 });
      expect(lookups).toBe(1);
      expect(receiver.deliveries[0]!.headers.host).toBe(`receiver.invalid:${port}`);
      expect(receiver.deliveries[0]!.specVerified).toBe(true);
    } finally {
      await receiver.close();
    }
  });

  it('reports a timeout as a retryable outcome', async () => {
    const receiver = await startReceiver({ secret: 's', fallback: 'hang' });
    try {
      const sender = new WebhookSender({ policy: { allowInsecure: true }, resolver: async () => [], timeoutMs: 200 });
      // The receiver never answers: only the sender's own 200 ms timeout ends this (the test timeout is the hang guard).
      const outcome = await sender.send({ url: receiver.url, body: '{}', secret: 's', webhookId: 'w', eventType: 'comms.test', unixTime: Math.floor(Date.now() / 1000) });
      sender.close();
      expect(outcome).toMatchObject({ kind: 'error', retryable: true, error: expect.stringContaining('200 ms') });
    } finally {
      await receiver.close();
    }
  });
});
