import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import addressparser from 'nodemailer/lib/addressparser/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import { MESSAGE_KEY_HEADER, OutboxMailer, TRACKING_ARGS_HEADER } from '../../src/adapters/mailer/outbox.js';
import { MailerError, type MailAddress, type MailMessage } from '../../src/adapters/mailer/port.js';
import { SendGridMailer } from '../../src/adapters/mailer/sendgrid.js';
import { SmtpMailer, smtpError } from '../../src/adapters/mailer/smtp.js';
import { mailerContract, type DeliveredMail } from '../contract/mailer.contract.js';
import { startSendGridDouble, type SendGridAddress, type SendGridDouble, type SendGridMail } from '../support/sendgrid-double.js';

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

// ---------------------------------------------------------------- reading back

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function fromSendGrid(body: SendGridMail): DeliveredMail {
  const { messageKey, ...trackingArgs } = body.custom_args ?? {};
  const address = ({ email, name }: SendGridAddress): MailAddress => (name === undefined ? { email } : { email, name });
  return {
    messageKey,
    from: address(body.from),
    to: address(body.personalizations[0].to[0]),
    replyTo: body.reply_to && address(body.reply_to),
    subject: body.subject,
    html: body.content.find((part) => part.type === 'text/html')?.value ?? '',
    text: body.content.find((part) => part.type === 'text/plain')?.value,
    attachments: (body.attachments ?? []).map((attachment) => ({
      filename: attachment.filename,
      contentType: attachment.type ?? '',
      content: Buffer.from(attachment.content, 'base64'),
    })),
    trackingArgs,
  };
}

/**
 * Reads the outbox's `.eml` files back. mailparser is not a dependency, so this is a minimal
 * MIME reader for what nodemailer writes: folded headers, RFC 2047 encoded words, RFC 2231
 * file names, multipart bodies, base64 and quoted-printable parts, UTF-8 throughout.
 */
async function readOutbox(dir: string): Promise<DeliveredMail[]> {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.eml'))
    .map((file) => fromEml(fs.readFileSync(path.join(dir, file), 'latin1')));
}

interface MimePart {
  headers: Map<string, string>;
  body: string;
}

function fromEml(raw: string): DeliveredMail {
  const root = mimePart(raw);
  const leaves = mimeLeaves(root);
  const header = (name: string) => root.headers.get(name.toLowerCase());
  const bodyOf = (type: string) => {
    const part = leaves.find((leaf) => headerValue(leaf.headers.get('content-type')).value === type && !isAttachment(leaf));
    return part && decodeBody(part).toString('utf8');
  };
  const tracking = header(TRACKING_ARGS_HEADER);
  return {
    messageKey: header(MESSAGE_KEY_HEADER) ?? '',
    from: emlAddress(header('from'))!,
    to: emlAddress(header('to'))!,
    replyTo: emlAddress(header('reply-to')),
    subject: decodeWords(header('subject') ?? ''),
    html: bodyOf('text/html') ?? '',
    text: bodyOf('text/plain'),
    attachments: leaves.filter(isAttachment).map((leaf) => ({
      filename: fileName(headerValue(leaf.headers.get('content-disposition')).params),
      contentType: headerValue(leaf.headers.get('content-type')).value,
      content: decodeBody(leaf),
    })),
    trackingArgs: tracking ? JSON.parse(tracking) : {},
  };
}

function mimePart(raw: string): MimePart {
  const split = raw.indexOf('\r\n\r\n');
  const headers = new Map<string, string>();
  for (const line of raw.slice(0, split).replace(/\r\n(?=[ \t])/g, '').split('\r\n')) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  return { headers, body: raw.slice(split + 4) };
}

function mimeLeaves(part: MimePart): MimePart[] {
  const { value, params } = headerValue(part.headers.get('content-type'));
  if (!value.startsWith('multipart/')) return [part];
  const sections = part.body.split(`--${params.boundary}`).slice(1, -1);
  return sections.flatMap((section) => mimeLeaves(mimePart(section.replace(/^\r\n/, '').replace(/\r\n$/, ''))));
}

const isAttachment = (part: MimePart): boolean => headerValue(part.headers.get('content-disposition')).value === 'attachment';

function decodeBody(part: MimePart): Buffer {
  const encoding = part.headers.get('content-transfer-encoding')?.toLowerCase();
  if (encoding === 'base64') return Buffer.from(part.body.replace(/\s+/g, ''), 'base64');
  if (encoding === 'quoted-printable') return qpBytes(part.body.replace(/=\r\n/g, ''));
  return Buffer.from(part.body, 'latin1');
}

/** `type/subtype; key=value; key="quoted value"` into its value and lower-cased parameters. */
function headerValue(header = ''): { value: string; params: Record<string, string> } {
  const [value] = header.split(';');
  const params: Record<string, string> = {};
  for (const [, key, raw] of header.matchAll(/;\s*([^=\s;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g)) {
    params[key.toLowerCase()] = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw.trim();
  }
  return { value: value.trim().toLowerCase(), params };
}

/** `filename=...`, or RFC 2231 `filename*0*=utf-8''...; filename*1*=...` continuations. */
function fileName(params: Record<string, string>): string {
  if (params.filename) return decodeWords(params.filename);
  const pieces = Object.keys(params)
    .filter((key) => key.startsWith('filename*'))
    .sort((a, b) => Number(a.match(/\d+/)?.[0] ?? 0) - Number(b.match(/\d+/)?.[0] ?? 0))
    .map((key) => params[key]);
  return decodeURIComponent(pieces.join('').replace(/^[^']*'[^']*'/, ''));
}

function emlAddress(header: string | undefined): MailAddress | undefined {
  if (!header) return undefined;
  const [parsed] = addressparser(header, { flatten: true });
  const name = decodeWords(parsed.name);
  return name ? { email: parsed.address, name } : { email: parsed.address };
}

/** RFC 2047: adjacent encoded words join (their bytes may split a character), then decode as UTF-8. */
function decodeWords(value: string): string {
  return value.replace(/=\?[^?]+\?[BbQq]\?[^?]*\?=(?:\s*=\?[^?]+\?[BbQq]\?[^?]*\?=)*/g, (run) => {
    const words = run.match(/=\?[^?]+\?[BbQq]\?[^?]*\?=/g) ?? [];
    const bytes = words.map((word) => {
      const [, , encoding, text] = word.split('?');
      return encoding.toUpperCase() === 'B' ? Buffer.from(text, 'base64') : qpBytes(text.replace(/_/g, ' '));
    });
    return Buffer.concat(bytes).toString('utf8');
  });
}

function qpBytes(text: string): Buffer {
  return Buffer.from(text.replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
}
