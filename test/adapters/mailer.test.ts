import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OutboxMailer } from '../../src/adapters/mailer/outbox.js';
import type { MailerError } from '../../src/adapters/mailer/port.js';
import { mailMessage } from '../support/mail-message.js';
import { SendGridMailer } from '../../src/adapters/mailer/sendgrid.js';
import { SmtpMailer, smtpError } from '../../src/adapters/mailer/smtp.js';
import { mailerContract } from '../contract/mailer.contract.js';
import { fromEml, fromSendGrid, readOutbox } from '../support/mail-readers.js';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { startSmtpServer, type SmtpTestServer } from '../support/smtp-server.js';
import { refusedPort } from '../support/ports.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mailer-contract-'));
const doubles: SendGridDouble[] = [];
const smtpServers: SmtpTestServer[] = [];
afterAll(async () => {
  await Promise.all([...doubles.map((double) => double.close()), ...smtpServers.map((server) => server.close())]);
  fs.rmSync(root, { recursive: true, force: true });
});

const message = mailMessage;

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
    passesTrackingArgs: true,
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

    // 401 and 403 `access forbidden` refuse the key, not the message: held and retried (docs/invitations.md).
    expect(errors.map((error) => (error as MailerError).permanent)).toEqual([true, false, false, true, false, false, true]);
    expect(errors.map((error) => (error as MailerError).credentialsRefused !== undefined)).toEqual([false, true, true, false, false, false, false]);
    for (const error of errors) expect(`${(error as Error).stack} ${JSON.stringify(error)}`).not.toContain(double.apiKey);
  });

  it('an unreachable provider is a transient MailerError: nothing went out, so it is retried', async () => {
    const mailer = new SendGridMailer({ apiKey: 'SG.unused', baseUrl: `http://127.0.0.1:${refusedPort}` });
    await expect(mailer.send(message())).rejects.toMatchObject({ name: 'MailerError', permanent: false, outcomeUnknown: false });
  });

  it('a provider that does not answer within timeoutMs is a transient MailerError whose outcome is unknown', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as net.AddressInfo;
      const mailer = new SendGridMailer({ apiKey: 'SG.unused', baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 200 });
      // The request went out; SendGrid may have accepted it before the answer was lost.
      await expect(mailer.send(message())).rejects.toMatchObject({ name: 'MailerError', permanent: false, outcomeUnknown: true });
    } finally {
      silent.close();
    }
  });
});

// ---------------------------------------------------------------- smtp
// A real SMTP server (smtp-server, test/support/smtp-server.ts) on loopback, plain text with
// AUTH required. The contract's failure cases are phrased in HTTP terms (statusCode 500, 503,
// 429, 400, and 401 for a wrong API key), which an SMTP reply cannot carry: the adapter reports
// the SMTP reply code (451, 550, 535). So this run passes no failNext and no withApiKey, the
// contract skips those three cases, and their SMTP equivalents are in 'smtp mailer' below.

async function startSmtp(options?: Parameters<typeof startSmtpServer>[0]): Promise<SmtpTestServer> {
  const server = await startSmtpServer(options);
  smtpServers.push(server);
  return server;
}

mailerContract('smtp', async () => {
  const server = await startSmtp();
  return {
    mailer: new SmtpMailer(server.url),
    delivered: () => Promise.all(server.received.map((mail) => fromEml(mail.raw))),
  };
});

describe('smtp mailer', () => {
  const rejection = (send: Promise<unknown>) => send.then(() => expect.unreachable('the send succeeded'), (error: unknown) => error as MailerError);

  it.each(['PLAIN', 'LOGIN'] as const)('logs in with the user and percent-encoded password of the URL over AUTH %s', async (method) => {
    const server = await startSmtp({ authMethods: [method] });
    const mailer = new SmtpMailer(server.url);
    await mailer.send(message());
    await mailer.close();

    expect(server.logins).toEqual([{ method, username: server.user, accepted: true }]);
    expect(server.received.map((mail) => mail.auth)).toEqual([{ method, username: server.user }]);
  });

  it('the receipt is the Message-ID the message went out with; the envelope is from and to only', async () => {
    const server = await startSmtp();
    const mailer = new SmtpMailer(server.url);
    const receipt = await mailer.send(message({ replyTo: { email: 'help@example.com' } }));
    await mailer.close();

    const [mail] = server.received;
    expect(mail.raw.toString('latin1')).toMatch(new RegExp(`^Message-ID: ${escapeRegExp(receipt.providerMessageId)}\r$`, 'm'));
    expect(receipt.providerMessageId).toMatch(/^<[^>]+@example\.com>$/);
    expect(mail.envelope).toEqual({ from: 'events@example.com', to: ['guest@example.org'] });
  });

  it.each(['PLAIN', 'LOGIN'] as const)('a wrong password (AUTH %s) is a MailerError refusing our credentials (held, not permanent), 535, never containing the password', async (method) => {
    const server = await startSmtp({ authMethods: [method] });
    const wrong = `wrong:${randomUUID()}/@%`;
    const mailer = new SmtpMailer(server.urlWith({ password: wrong }));
    const error = await rejection(mailer.send(message()));
    await mailer.close();

    expect(error).toMatchObject({ name: 'MailerError', permanent: false, statusCode: 535, credentialsRefused: expect.stringContaining('SMTP_URL') });
    const shown = `${error.message} ${error.stack} ${JSON.stringify(error)}`;
    // As typed, as it stands in the URL, and as it crosses the wire (AUTH PLAIN / AUTH LOGIN).
    const forms = [wrong, encodeURIComponent(wrong), base64(`\0${server.user}\0${wrong}`), base64(wrong)];
    for (const form of forms) expect(shown).not.toContain(form);
    expect(server.logins).toEqual([{ method, username: server.user, accepted: false }]);
    expect(server.received).toEqual([]);
  });

  it('a 451 reply, to RCPT TO or to the data, is a transient MailerError carrying the reply; the next send goes through', async () => {
    const server = await startSmtp();
    const mailer = new SmtpMailer(server.url);
    for (const at of ['RCPT', 'DATA'] as const) {
      server.failNext({ code: 451, message: `Try again later (${at})`, at });
      const error = await rejection(mailer.send(message()));
      expect(error).toMatchObject({ name: 'MailerError', permanent: false, statusCode: 451 });
      expect(error.message).toContain(`Try again later (${at})`);
    }
    const delivered = message();
    await mailer.send(delivered);
    await mailer.close();

    const keys = await Promise.all(server.received.map(async (mail) => (await fromEml(mail.raw)).messageKey));
    expect(keys).toEqual([delivered.messageKey]);
  });

  it('a 5xx reply, to MAIL FROM, RCPT TO or the data, is a permanent MailerError carrying the reply', async () => {
    const server = await startSmtp();
    const mailer = new SmtpMailer(server.url);
    const replies = [
      { code: 553, message: 'Sender address rejected', at: 'MAIL' },
      { code: 550, message: 'Mailbox unavailable', at: 'RCPT' },
      { code: 554, message: 'Message rejected as spam', at: 'DATA' },
    ] as const;
    for (const reply of replies) {
      server.failNext(reply);
      const error = await rejection(mailer.send(message()));
      expect(error).toMatchObject({ name: 'MailerError', permanent: true, statusCode: reply.code });
      expect(error.message).toContain(reply.message);
    }
    await mailer.close();

    expect(server.received).toEqual([]);
  });

  it('maps 5xx replies to permanent errors and 4xx, connection and timeout failures before the end of data to transient ones', () => {
    const error = (fields: object) => Object.assign(new Error('smtp failure'), fields);
    const before = { bodyEnded: false };
    expect(smtpError(error({ responseCode: 550, code: 'EENVELOPE' }), before)).toMatchObject({ permanent: true, statusCode: 550, outcomeUnknown: false });
    expect(smtpError(error({ responseCode: 535, code: 'EAUTH' }), before)).toMatchObject({ permanent: false, credentialsRefused: expect.stringContaining('SMTP_URL') });
    expect(smtpError(error({ responseCode: 451, code: 'EENVELOPE' }), before)).toMatchObject({ permanent: false, statusCode: 451, outcomeUnknown: false });
    expect(smtpError(error({ code: 'ECONNECTION', command: 'CONN' }), before)).toMatchObject({ permanent: false, statusCode: undefined, outcomeUnknown: false });
    expect(smtpError(error({ code: 'ETIMEDOUT', command: 'CONN' }), before)).toMatchObject({ permanent: false, outcomeUnknown: false });
  });

  it('after the end of data, a reply code is still an answer; no reply (or a 2xx cut short) is an unknown outcome', () => {
    const error = (fields: object) => Object.assign(new Error('smtp failure'), fields);
    const after = { bodyEnded: true };
    expect(smtpError(error({ responseCode: 554, code: 'EMESSAGE', command: 'DATA' }), after)).toMatchObject({ permanent: true, outcomeUnknown: false });
    expect(smtpError(error({ responseCode: 452, code: 'EMESSAGE', command: 'DATA' }), after)).toMatchObject({ permanent: false, outcomeUnknown: false });
    // A connection closed on an unfinished "250 ..." line (nodemailer keeps it as the response).
    expect(smtpError(error({ responseCode: 250, code: 'ECONNECTION', command: 'CONN' }), after)).toMatchObject({ permanent: false, outcomeUnknown: true });
    for (const code of ['ETIMEDOUT', 'ECONNECTION', 'ESOCKET']) {
      expect(smtpError(error({ code, command: 'CONN' }), after)).toMatchObject({ permanent: false, outcomeUnknown: true });
    }
  });

  // The reply to the end of data is lost: the server has the message (server.received), so
  // another try would deliver it twice. Each drop comes once; a second send would go through.
  it.each([
    ['never answers (the socket timeout)', 'hang'],
    ['closes the connection', 'close'],
    ['resets the connection', 'reset'],
  ] as const)('a server that takes the whole message and then %s: the outcome is unknown', async (_what, drop) => {
    const server = await startSmtp();
    // Short for the server that never answers, yet well above any stall of a loaded machine: a
    // timeout before the end of data would be a (transient) failure of another kind.
    const mailer = new SmtpMailer(server.url, { timeoutMs: 3000 });
    server.failNext({ at: 'DATA', drop });
    const error = await rejection(mailer.send(message()));
    await mailer.close();

    expect(error).toMatchObject({ name: 'MailerError', permanent: false, outcomeUnknown: true, statusCode: undefined });
    expect(error.message).toMatch(/^SMTP: .*may have accepted it/);
    expect(server.received).toHaveLength(1);
  }, 30_000);

  it.each([
    ['closes the connection at MAIL FROM', 'MAIL', 'close'],
    ['resets the connection at RCPT TO', 'RCPT', 'reset'],
    ['never answers RCPT TO (the socket timeout)', 'RCPT', 'hang'],
  ] as const)('a server that %s: a transient failure, nothing was sent; the next send goes through', async (_what, at, drop) => {
    const server = await startSmtp();
    const mailer = new SmtpMailer(server.url, { timeoutMs: 3000 });
    server.failNext({ at, drop });
    const error = await rejection(mailer.send(message()));
    expect(error).toMatchObject({ name: 'MailerError', permanent: false, outcomeUnknown: false });
    expect(server.received).toEqual([]);

    const delivered = message();
    await mailer.send(delivered);
    await mailer.close();
    const keys = await Promise.all(server.received.map(async (mail) => (await fromEml(mail.raw)).messageKey));
    expect(keys).toEqual([delivered.messageKey]);
  }, 30_000);

  it('a connection reset while the message data is still being sent: transient, the server cannot have taken it', async () => {
    const server = await startSmtp();
    const mailer = new SmtpMailer(server.url, { timeoutMs: 5000 });
    // Larger than what the socket buffers hold, so the reset comes while the client is still writing.
    const big = { filename: 'big.bin', contentType: 'application/octet-stream', content: randomBytes(6 * 1024 * 1024) };
    server.failNext({ at: 'BODY', drop: 'reset' });
    const error = await rejection(mailer.send(message({ attachments: [big] })));
    expect(error).toMatchObject({ name: 'MailerError', permanent: false, outcomeUnknown: false });
    expect(server.received).toEqual([]);

    await mailer.send(message());
    await mailer.close();
    expect(server.received).toHaveLength(1);
  }, 30_000);

  it('the timeout applies to the connection: a server that never greets fails the send as transient', async () => {
    // A listener that accepts and says nothing: without the transport option nodemailer would wait
    // its own 30 s greeting timeout (the vitest timeout below is the hang guard).
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const mailer = new SmtpMailer(`smtp://127.0.0.1:${(silent.address() as net.AddressInfo).port}`, { timeoutMs: 500 });
      const error = await rejection(mailer.send(message()));
      await mailer.close();
      expect(error).toMatchObject({ name: 'MailerError', permanent: false, outcomeUnknown: false });
      expect(error.message).toMatch(/Greeting never received|Timeout/);
    } finally {
      silent.close();
    }
  }, 20_000);

  it('rejects an invalid to address permanently, before connecting', async () => {
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${refusedPort}`);
    await expect(mailer.send(message({ to: { email: 'nope' } }))).rejects.toMatchObject({ permanent: true });
    await mailer.close();
  });

  it('an unreachable server is a transient MailerError', async () => {
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${refusedPort}`);
    await expect(mailer.send(message())).rejects.toMatchObject({ name: 'MailerError', permanent: false });
    await mailer.close();
  });
});

// ---------------------------------------------------------------- helpers

const base64 = (text: string) => Buffer.from(text).toString('base64');
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('outbox leftovers of a killed process', () => {
  it('removes temp files whose writer is gone, keeps those of a live writer and the finished files', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-leftovers-'));
    try {
      const dead = 2 ** 22 + 12345; // above the default pid_max: no such process
      fs.writeFileSync(path.join(dir, `.a.eml.${dead}.0f0e0d0c-0b0a-4908-8706-050403020100.tmp`), 'half');
      fs.writeFileSync(path.join(dir, `.b.eml.${process.pid}.0f0e0d0c-0b0a-4908-8706-050403020101.tmp`), 'being written');
      fs.writeFileSync(path.join(dir, 'c.eml'), 'whole');
      const removed = await new OutboxMailer(dir).removeLeftovers();
      expect(removed).toBe(1);
      expect(fs.readdirSync(dir).sort()).toEqual([`.b.eml.${process.pid}.0f0e0d0c-0b0a-4908-8706-050403020101.tmp`, 'c.eml']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
