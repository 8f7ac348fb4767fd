import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, type Receiver } from '../webhooks/receiver.js';
import { invitedGuest } from '../support/flows.js';

/**
 * The send worker on the real @sendgrid/mail client against a stand-in for SendGrid's mail/send that
 * gives the answers the SendGrid double does not: a connection dropped after the request arrived,
 * and a 429 with `X-RateLimit-Reset` (SendGrid v3 "Rate Limits"). It answers by recipient address.
 */
type Answer = 'drop' | 'rate-limit' | 'accept';
const script = new Map<string, Answer[]>();
const received: { to: string; at: number }[] = [];
/** The X-RateLimit-Reset (Unix seconds) each rate-limited recipient was given. */
const resets = new Map<string, number>();

const api = '/comms/v1/api/comms';
let service: TestService;
let standIn: http.Server;
const receivers: Receiver[] = [];

beforeAll(async () => {
  standIn = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { personalizations: { to: { email: string }[] }[] };
    const to = body.personalizations[0]!.to[0]!.email;
    received.push({ to, at: Date.now() });
    const answer = script.get(to)?.shift() ?? 'accept';
    if (answer === 'drop') return void req.socket.destroy();
    if (answer === 'rate-limit') {
      const reset = Math.floor(Date.now() / 1000) + 2;
      resets.set(to, reset);
      res.writeHead(429, { 'Content-Type': 'application/json', 'X-RateLimit-Limit': '150', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) });
      return void res.end(JSON.stringify({ errors: [{ field: null, message: 'too many requests' }] }));
    }
    res.writeHead(202, { 'X-Message-Id': `stand-in-${received.length}` }).end();
  });
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
  service = await startTestService({
    WEBHOOK_ALLOW_INSECURE: 'true',
    SENDGRID_API_KEY: 'SG.stand-in',
    SENDGRID_BASE_URL: `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`,
    SEND_RETRY_DELAYS_MS: '50,50',
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
  standIn.closeAllConnections();
  standIn.close();
});

const guestWithTemplate = (email: string) => invitedGuest(service, email, receivers);

async function invitationOf(client: Client, attendeeId: string, status: string) {
  return eventually(async () => {
    const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${attendeeId}`)).body.items;
    return item?.status === status ? item : undefined;
  }, 15_000, `invitation ${status}`);
}

describe('SendGrid answers the send worker must not misread', () => {
  it('a connection lost after SendGrid got the request: outcome_unknown, reported once, never sent again', async () => {
    script.set('dropped@example.com', ['drop', 'drop', 'drop']);
    const { client, receiver, guestId } = await guestWithTemplate('dropped@example.com');
    const invitation = await invitationOf(client, guestId, 'failed');
    expect(invitation.error).toMatch(/^outcome_unknown: SendGrid did not answer/);
    expect(invitation.attempts).toBe(1);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.body).toMatchObject({ type: 'comms.failed', data: { status: 'failed', error: expect.stringMatching(/^outcome_unknown/) } });
    expect(received.filter((r) => r.to === 'dropped@example.com')).toHaveLength(1);
  });

  it('a 429 is retried no sooner than its X-RateLimit-Reset, not after the (shorter) retry schedule', async () => {
    script.set('limited@example.com', ['rate-limit']);
    const { client, receiver, guestId } = await guestWithTemplate('limited@example.com');
    const invitation = await invitationOf(client, guestId, 'sent');
    expect(invitation.attempts).toBe(2);
    const failed = invitation.history.find((h: { type: string }) => h.type === 'attempt_failed') as { detail: string };
    expect(failed.detail).toMatch(/^provider_unavailable: SendGrid rejected the message \(429/);
    const retryAt = Date.parse(/retry at (\S+)$/.exec(failed.detail)![1]!);
    expect(retryAt).toBeGreaterThanOrEqual(resets.get('limited@example.com')! * 1000);
    const [first, second] = received.filter((r) => r.to === 'limited@example.com');
    expect(second!.at).toBeGreaterThanOrEqual(resets.get('limited@example.com')! * 1000);
    expect(first!.at).toBeLessThan(second!.at);
    expect((await receiver.waitFor(1))[0]!.body.type).toBe('comms.sent');
  });
});
