import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OutboxMailer } from '../../src/adapters/mailer/outbox.js';
import type { MailerError, MailMessage } from '../../src/adapters/mailer/port.js';
import { SendGridMailer } from '../../src/adapters/mailer/sendgrid.js';
import { SmtpMailer, smtpError } from '../../src/adapters/mailer/smtp.js';
import { mailerContract } from '../contract/mailer.contract.js';
import { fromSendGrid, readOutbox } from '../support/mail-readers.js';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mailer-contract-'));
const doubles: SendGridDouble[] = [];
afterAll(async () => {
  await Promise.all(doubles.map((double) => double.close()));
  fs.rmSync(root, { recursive: true, force: true });
});

const message = (overrides: Partial<MailMessage> = {}): MailMessage => ({
  messageKey: randomUUID(),
  from: { email: 'events@example.com', name: 'Example Events' },
  to: { email: 'guest@example.org' },
  subject: 'Your invitation',
  html: '<p>Welcome</p>',
  ...overrides,
});

// ---------------------------------------------------------------- outbox

mailerContract('outbox', async () => {
  const dir = path.join(root, 'outbox-contract', 'not-yet-created');
  return { mailer: new OutboxMailer(dir), delivered: () => readOutbox(dir), dedupesMessageKey: true };
});

describe('outbox mailer', () => {
  it('writes one <messageKey>.eml per message and leaves no temp files behind', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'outbox-'));
    const mailer = new OutboxMailer(dir);
    const first = message();
    // Concurrent hand-overs of one message race past the "already there?" check together.
    const receipts = await Promise.all([mailer.send(first), mailer.send(first), mailer.send(first)]);
    await mailer.send(message({ messageKey: 'other' }));

    expect(receipts.map((receipt) => receipt.providerMessageId)).toEqual(Array(3).fill(`${first.messageKey}.eml`));
    expect(fs.readdirSync(dir).sort()).toEqual([`${first.messageKey}.eml`, 'other.eml'].sort());
  });

  it('writes a standard RFC 822 message: Message-ID, Date, multipart/alternative, base64 attachment', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'outbox-'));
    const sent = message({ text: 'Welcome', attachments: [{ filename: 'a.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF') }] });
    await new OutboxMailer(dir).send(sent);

    const raw = fs.readFileSync(path.join(dir, `${sent.messageKey}.eml`), 'latin1');
    expect(raw).toMatch(/^Message-ID: <[^>]+@example\.com>\r$/m);
    expect(raw).toMatch(/^Date: /m);
    expect(raw).toMatch(/^Content-Type: multipart\/alternative;/m);
    const attachment = raw.slice(raw.indexOf('Content-Type: application/pdf'));
    expect(attachment).toMatch(/^Content-Disposition: attachment; filename=a\.pdf\r$/m);
    expect(attachment).toMatch(/^Content-Transfer-Encoding: base64\r\n(?:.+\r\n)*\r\nJVBERg==\r$/m);
  });

  it('refuses a message key that is not a plain file name, permanently', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'outbox-'));
    for (const messageKey of ['../escape', '.hidden', 'a/b', '']) {
      await expect(new OutboxMailer(dir).send(message({ messageKey }))).rejects.toMatchObject({ permanent: true });
    }
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('a folder it cannot write is a transient MailerError', async () => {
    const file = path.join(root, 'a-file-not-a-folder');
    fs.writeFileSync(file, '');
    await expect(new OutboxMailer(file).send(message())).rejects.toMatchObject({ name: 'MailerError', permanent: false });
  });
});

// ---------------------------------------------------------------- sendgrid

async function startDouble(): Promise<SendGridDouble> {
  const double = await startSendGridDouble();
  doubles.push(double);
  return double;
}

mailerContract('sendgrid', async () => {
  const double = await startDouble();
  return {
    mailer: new SendGridMailer({ apiKey: double.apiKey, baseUrl: double.url }),
    delivered: async () => double.accepted.map(({ body }) => fromSendGrid(body)),
    failNext: double.failNext,
    withApiKey: (apiKey) => new SendGridMailer({ apiKey, baseUrl: double.url }),
  };
});

describe('sendgrid mailer', () => {
  it("returns SendGrid's X-Message-Id and sends attachments as base64 with disposition attachment", async () => {
    const double = await startDouble();
    const mailer = new SendGridMailer({ apiKey: double.apiKey, baseUrl: double.url });
    const content = Buffer.from('%PDF');
    const receipt = await mailer.send(message({ attachments: [{ filename: 'a.pdf', contentType: 'application/pdf', content }] }));

    expect(receipt.providerMessageId).toBe(double.accepted[0].messageId);
    expect(double.accepted[0].body.attachments).toEqual([
      { filename: 'a.pdf', type: 'application/pdf', content: content.toString('base64'), disposition: 'attachment' },
    ]);
  });

  it('two instances with different keys and base URLs do not share settings', async () => {
    const [one, two] = await Promise.all([startDouble(), startDouble()]);
    const first = new SendGridMailer({ apiKey: one.apiKey, baseUrl: one.url });
    const second = new SendGridMailer({ apiKey: two.apiKey, baseUrl: two.url });
    await first.send(message());
    await second.send(message());
    await first.send(message());

    expect([one.accepted.length, two.accepted.length]).toEqual([2, 1]);
  });

  it('no error message ever contains the API key, whatever the failure', async () => {
    const double = await startDouble();
    const mailer = new SendGridMailer({ apiKey: double.apiKey, baseUrl: double.url });
    const errors: unknown[] = [];
    for (const status of [400, 401, 403, 413, 429, 500]) {
      double.failNext(status);
      errors.push(await mailer.send(message()).catch((error: unknown) => error));
    }
    errors.push(await mailer.send(message({ subject: '' })).catch((error: unknown) => error));

    expect(errors.map((error) => (error as MailerError).permanent)).toEqual([true, true, true, true, false, false, true]);
    for (const error of errors) expect(`${(error as Error).stack} ${JSON.stringify(error)}`).not.toContain(double.apiKey);
  });

  it('an unreachable provider is a transient MailerError', async () => {
    const mailer = new SendGridMailer({ apiKey: 'SG.unused', baseUrl: `http://127.0.0.1:${await closedPort()}` });
    await expect(mailer.send(message())).rejects.toMatchObject({ name: 'MailerError', permanent: false });
  });

  it('a provider that does not answer within timeoutMs is a transient MailerError', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as net.AddressInfo;
      const mailer = new SendGridMailer({ apiKey: 'SG.unused', baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 200 });
      await expect(mailer.send(message())).rejects.toMatchObject({ name: 'MailerError', permanent: false });
    } finally {
      silent.close();
    }
  });
});

// ---------------------------------------------------------------- smtp
// No SMTP server is installed here and a hand-written fake would test the fake, so the SMTP
// contract run waits for one (SMTP_URL); what runs without it is the error mapping and the
// paths that need no server.

describe('smtp mailer', () => {
  it('maps 5xx replies to permanent errors and 4xx, connection and timeout failures to transient ones', () => {
    const error = (fields: object) => Object.assign(new Error('smtp failure'), fields);
    expect(smtpError(error({ responseCode: 550, code: 'EENVELOPE' }))).toMatchObject({ permanent: true, statusCode: 550 });
    expect(smtpError(error({ responseCode: 535, code: 'EAUTH' }))).toMatchObject({ permanent: true });
    expect(smtpError(error({ responseCode: 451, code: 'EENVELOPE' }))).toMatchObject({ permanent: false, statusCode: 451 });
    expect(smtpError(error({ code: 'ECONNECTION' }))).toMatchObject({ permanent: false, statusCode: undefined });
    expect(smtpError(error({ code: 'ETIMEDOUT' }))).toMatchObject({ permanent: false });
  });

  it('rejects an invalid to address permanently, before connecting', async () => {
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${await closedPort()}`);
    await expect(mailer.send(message({ to: { email: 'nope' } }))).rejects.toMatchObject({ permanent: true });
    await mailer.close();
  });

  it('an unreachable server is a transient MailerError', async () => {
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${await closedPort()}`);
    await expect(mailer.send(message())).rejects.toMatchObject({ name: 'MailerError', permanent: false });
    await mailer.close();
  });
});

// ---------------------------------------------------------------- helpers

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
