/**
 * Reads sent mail back in one normalized shape, `DeliveredMail`, whichever adapter sent it:
 * the outbox's `.eml` files and the SMTP test server's raw messages (parsed with mailparser),
 * or the SendGrid double's requests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { simpleParser, type AddressObject } from 'mailparser';
import { MESSAGE_KEY_HEADER } from '../../src/adapters/mailer/outbox.js';
import type { MailAddress } from '../../src/adapters/mailer/port.js';
import type { DeliveredMail } from '../contract/mailer.contract.js';
import type { SendGridAddress, SendGridMail } from './sendgrid-double.js';

export function fromSendGrid(body: SendGridMail): DeliveredMail {
  const { messageKey, ...trackingArgs } = body.custom_args ?? {};
  const address = ({ email, name }: SendGridAddress): MailAddress => (name === undefined ? { email } : { email, name });
  return {
    messageKey: messageKey ?? '',
    from: address(body.from),
    to: address(body.personalizations[0]!.to[0]!),
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

/** Every `.eml` file in the outbox folder, parsed. */
export async function readOutbox(dir: string): Promise<DeliveredMail[]> {
  if (!fs.existsSync(dir)) return [];
  const files = fs.readdirSync(dir).filter((file) => file.endsWith('.eml'));
  return Promise.all(files.map((file) => fromEml(fs.readFileSync(path.join(dir, file)))));
}

export async function fromEml(raw: Buffer): Promise<DeliveredMail> {
  // Without skipHtmlToText mailparser invents `text` from the html of an html-only message;
  // with it, such a message reads back `text: ''`, which is no text part at all.
  const mail = await simpleParser(raw, { skipHtmlToText: true });
  const header = (name: string) => {
    const value = mail.headers.get(name.toLowerCase());
    return typeof value === 'string' ? value : undefined;
  };
  const first = (field: AddressObject | AddressObject[] | undefined): MailAddress | undefined => {
    const entry = (Array.isArray(field) ? field[0] : field)?.value[0];
    if (!entry?.address) return undefined;
    return entry.name ? { email: entry.address, name: entry.name } : { email: entry.address };
  };
  // The header the SMTP and outbox adapters once carried tracking args in (they no longer do): read
  // back if present, so a message that carried them again shows it.
  const tracking = header('X-Tracking-Args');
  return {
    messageKey: header(MESSAGE_KEY_HEADER) ?? '',
    from: first(mail.from)!,
    to: first(mail.to)!,
    replyTo: first(mail.replyTo),
    subject: mail.subject ?? '',
    html: typeof mail.html === 'string' ? mail.html : '',
    text: mail.text || undefined,
    attachments: mail.attachments.map((a) => ({ filename: a.filename ?? '', contentType: a.contentType, content: a.content })),
    trackingArgs: tracking ? JSON.parse(tracking) : {},
  };
}
