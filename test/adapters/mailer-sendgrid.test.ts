/**
 * The SendGrid mailer against what SendGrid's v3 mail/send does (docs: "Mail Send: Limitations",
 * "Mail Send errors", "Rate Limits"), with the SendGrid test double and, for the answers the double
 * does not give (a dropped connection, a 429 with X-RateLimit-Reset), a stand-in HTTP server here.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { MailerError, type MailMessage } from '../../src/adapters/mailer/port.js';
import { mailMessage } from '../support/mail-message.js';
import { SENDGRID_MAX_MESSAGE_BYTES, SendGridMailer } from '../../src/adapters/mailer/sendgrid.js';
import { rateLimitWait } from '../../src/adapters/sendgrid-errors.js';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';

const doubles: SendGridDouble[] = [];
const servers: http.Server[] = [];
afterAll(async () => {
  await Promise.all(doubles.map((double) => double.close()));
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

const message = (overrides: Partial<MailMessage> = {}): MailMessage => mailMessage({ text: 'Welcome', ...overrides });

async function double(): Promise<{ double: SendGridDouble; mailer: SendGridMailer }> {
  const started = await startSendGridDouble();
  doubles.push(started);
  return { double: started, mailer: new SendGridMailer({ apiKey: started.apiKey, baseUrl: started.url }) };
}

/** A stand-in for mail/send that answers each request with `answer`, after reading its whole body. */
async function standIn(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    requests.push(Buffer.concat(chunks).toString('utf8'));
    answer(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const failureOf = (promise: Promise<unknown>): Promise<MailerError> =>
  promise.then(
    () => {
      throw new Error('the send was expected to fail');
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(MailerError);
      return error as MailerError;
    },
  );

describe('sendgrid mailer: what SendGrid refuses is not sent that way', () => {
  it('html that renders to no text (an image only) goes without an empty text/plain part, which SendGrid refuses', async () => {
    const { double: sendgrid, mailer } = await double();
    await mailer.send(message({ html: '<img src="cid:qr">', text: '' }));
    expect(sendgrid.accepted[0]!.body.content).toEqual([{ type: 'text/html', value: '<img src="cid:qr">' }]);
  });

  it('a recipient name with "," or ";" (SendGrid refuses those in to.name) is sent without them', async () => {
    const { double: sendgrid, mailer } = await double();
    await mailer.send(message({ to: { email: 'smith@example.org', name: 'Smith, Jr.; Ann' } }));
    await mailer.send(message({ to: { email: 'comma@example.org', name: ' , ' } }));
    expect(sendgrid.accepted.map((a) => a.body.personalizations[0]!.to[0])).toEqual([
      { email: 'smith@example.org', name: 'Smith Jr. Ann' },
      { email: 'comma@example.org' },
    ]);
  });

  it('an email of 30 MB or more with its attachments is refused permanently (413) without uploading it', async () => {
    const { double: sendgrid, mailer } = await double();
    // 23 MB of PDF is over 30 MB once base64-encoded, as SendGrid receives it.
    const content = Buffer.alloc(23 * 1024 * 1024, 1);
    const error = await failureOf(mailer.send(message({ attachments: [{ filename: 'big.pdf', contentType: 'application/pdf', content }] })));
    expect(error).toMatchObject({ permanent: true, statusCode: 413, outcomeUnknown: false });
    expect(error.message).toMatch(/MB/);
    expect(sendgrid.accepted).toHaveLength(0);

    // Just under the limit is sent.
    const fits = Buffer.alloc(Math.floor(((SENDGRID_MAX_MESSAGE_BYTES - 4096) * 3) / 4), 1);
    await mailer.send(message({ attachments: [{ filename: 'fits.pdf', contentType: 'application/pdf', content: fits }] }));
    expect(sendgrid.accepted).toHaveLength(1);
  });

  it("a message the client's own checks refuse is a permanent MailerError, not a network failure", async () => {
    const { double: sendgrid, mailer } = await double();
    const error = await failureOf(mailer.send(message({ to: { email: undefined as unknown as string } })));
    expect(error).toMatchObject({ permanent: true, outcomeUnknown: false });
    expect(sendgrid.accepted).toHaveLength(0);
  });
});

describe('sendgrid mailer: no answer, and rate limits', () => {
  it('a connection dropped after the request went out leaves the outcome unknown (SendGrid may have accepted it)', async () => {
    const server = await standIn((req) => req.socket.destroy());
    const mailer = new SendGridMailer({ apiKey: 'SG.stand-in', baseUrl: server.url });
    const error = await failureOf(mailer.send(message()));
    expect(error).toMatchObject({ permanent: false, outcomeUnknown: true });
    expect(server.requests).toHaveLength(1);
  });

  it('a connection that times out before it is made (TLS never completes) sent nothing: retried, not left unknown', async () => {
    // A server that takes the TCP connection and never answers the TLS handshake: the request
    // cannot have gone out, whatever the timeout says.
    const received: Buffer[] = [];
    const silent = net.createServer((socket) => socket.on('data', (chunk) => received.push(chunk)));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const sockets = new Set<net.Socket>();
    silent.on('connection', (socket) => sockets.add(socket));
    try {
      const mailer = new SendGridMailer({ apiKey: 'SG.stand-in', baseUrl: `https://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 300 });
      const error = await failureOf(mailer.send(message()));
      expect(error).toMatchObject({ name: 'MailerError', permanent: false, outcomeUnknown: false });
      expect(error.message).toContain('SendGrid unreachable');
      // What arrived is the TLS ClientHello (a handshake record, type 22), never a request.
      expect(received.length).toBeGreaterThan(0);
      expect(received[0]![0]).toBe(22);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('a 429 carries the wait until X-RateLimit-Reset (Unix seconds), capped at an hour', async () => {
    let reset = 0;
    const server = await standIn((_req, res) => {
      res.writeHead(429, { 'Content-Type': 'application/json', 'X-RateLimit-Limit': '150', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) });
      res.end(JSON.stringify({ errors: [{ field: null, message: 'too many requests' }] }));
    });
    const mailer = new SendGridMailer({ apiKey: 'SG.stand-in', baseUrl: server.url });

    reset = Math.floor(Date.now() / 1000) + 120;
    const limited = await failureOf(mailer.send(message()));
    expect(limited).toMatchObject({ permanent: false, outcomeUnknown: false, statusCode: 429 });
    expect(limited.retryAfterMs).toBeGreaterThan(100_000);
    expect(limited.retryAfterMs).toBeLessThanOrEqual(120_000);

    reset = Math.floor(Date.now() / 1000) + 2 * 86_400;
    expect((await failureOf(mailer.send(message()))).retryAfterMs).toBe(3_600_000);
  });

  it('reads Retry-After too, and ignores a reset already past or unreadable', () => {
    const now = Date.UTC(2026, 10, 24, 12, 0, 0);
    expect(rateLimitWait({ 'x-ratelimit-reset': String(now / 1000 + 30) }, now)).toBe(30_000);
    expect(rateLimitWait({ 'Retry-After': '5' }, now)).toBe(5_000);
    expect(rateLimitWait({ 'retry-after': new Date(now + 7_000).toUTCString() }, now)).toBe(7_000);
    expect(rateLimitWait({ 'x-ratelimit-reset': String(now / 1000 - 30) }, now)).toBe(0);
    expect(rateLimitWait({ 'x-ratelimit-reset': 'soon' }, now)).toBeUndefined();
    expect(rateLimitWait({}, now)).toBeUndefined();
  });
});
