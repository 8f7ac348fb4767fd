/**
 * Mailer adapter for the embedded mode (docs/invitations.md): every message becomes one RFC 822
 * `.eml` file in a folder, named `<messageKey>.eml`. The receipt's `providerMessageId` is
 * that file name, so a reader goes from a receipt to the file without parsing anything.
 */
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type Mail from 'nodemailer/lib/mailer/index.js';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { z } from 'zod';
import { MailerError, type MailAddress, type Mailer, type MailMessage, type MailReceipt } from './port.js';
import { processAlive } from '../../shared/process-alive.js';
import { isEmailAddress } from '../../domain/email-address.js';

/**
 * Header carrying `MailMessage.messageKey` (the attendeeInvitationId, an opaque id), so a moved or
 * forwarded file, or a bounce quoting the message's headers, still names its message. It is the
 * only id of ours in the headers: `trackingArgs` are not rendered (every header reaches the recipient).
 */
export const MESSAGE_KEY_HEADER = 'X-Message-Key';

export class OutboxMailer implements Mailer {
  readonly kind = 'outbox';

  constructor(private readonly dir: string) {}

  /**
   * Removes temporary files a killed process left (issue 12, item 4). A temp file names the
   * pid that wrote it: it is left only while that process lives on this host, else removed
   * (and any temp file older than an hour, from another host sharing the folder). Returns
   * how many it removed.
   */
  async removeLeftovers(now = Date.now()): Promise<number> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch {
      return 0;
    }
    let removed = 0;
    for (const name of names) {
      const match = /^\..+\.(\d+)\.[0-9a-f-]+\.tmp$/.exec(name) ?? /^\..+\.[0-9a-f-]+\.tmp$/.exec(name);
      if (!match) continue;
      const file = path.join(this.dir, name);
      const pid = match[1] ? Number(match[1]) : undefined;
      const stat = await fs.stat(file).catch(() => undefined);
      if (!stat) continue;
      const orphan = (pid !== undefined && pid !== process.pid && !processAlive(pid)) || now - stat.mtimeMs > 3_600_000 || pid === undefined;
      if (orphan) {
        await fs.rm(file, { force: true });
        removed += 1;
      }
    }
    return removed;
  }

  async send(message: MailMessage): Promise<MailReceipt> {
    const fileName = `${checkedMessageKey(message.messageKey)}.eml`;
    const receipt = { providerMessageId: fileName };
    const options = mailOptions(message);
    const target = path.join(this.dir, fileName);
    // A repeated hand-over of the same message is not a second email.
    if (await exists(target)) return receipt;
    try {
      const raw = await new MailComposer(options).compile().build();
      await fs.mkdir(this.dir, { recursive: true });
      await writeOnce(target, raw);
    } catch (error) {
      // Disk full, permissions, a folder removed underneath: the same message may succeed later.
      throw new MailerError(`outbox: cannot write ${fileName}: ${(error as Error).message}`, false);
    }
    return receipt;
  }

  async discard(receipt: MailReceipt): Promise<void> {
    // The receipt names a file of this folder (`send`'s own file name), never a path.
    if (path.basename(receipt.providerMessageId) !== receipt.providerMessageId) throw new Error(`outbox: not a message file name: ${receipt.providerMessageId}`);
    await fs.rm(path.join(this.dir, receipt.providerMessageId), { force: true });
  }

  async close(): Promise<void> {}
}

/**
 * Deletes the messages (`.eml` files) of the folder written before `cutoffMs` (epoch ms, by the
 * file's modification time), for OUTBOX_RETENTION_DAYS: the folder otherwise keeps every email
 * ever sent, each with a guest's address, name and code. A file guards against a second copy of
 * its message only while that message's send is in progress (seconds); the invitation's stream
 * is what keeps an invitation from being sent twice, so a removed file lets nothing go out again.
 * Returns how many it removed; a folder not made yet holds none.
 */
export async function removeOutboxMessagesBefore(dir: string, cutoffMs: number): Promise<number> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.endsWith('.eml') || name.startsWith('.')) continue;
    const file = path.join(dir, name);
    const stat = await fs.stat(file).catch(() => undefined);
    if (!stat?.isFile() || stat.mtimeMs >= cutoffMs) continue;
    await fs.rm(file, { force: true });
    removed += 1;
  }
  return removed;
}

/**
 * The nodemailer options for a message (shared with the SMTP adapter, so both render the same
 * RFC 822 message). Throws a permanent MailerError for an address no provider would accept.
 */
export function mailOptions(message: MailMessage): Mail.Options {
  return {
    from: checkedAddress('from', message.from),
    to: checkedAddress('to', message.to),
    replyTo: message.replyTo && checkedAddress('replyTo', message.replyTo),
    subject: message.subject,
    html: message.html,
    text: message.text,
    attachments: (message.attachments ?? []).map(({ filename, contentType, content, contentId }) => ({
      filename,
      contentType,
      content,
      // nodemailer puts an attachment with a cid inline, in a multipart/related part with the html.
      ...(contentId ? { cid: contentId, contentDisposition: 'inline' as const } : {}),
    })),
    headers: {
      [MESSAGE_KEY_HEADER]: message.messageKey,
      ...(message.unsubscribeAddress && { 'List-Unsubscribe': { prepared: true, value: listUnsubscribe(message.unsubscribeAddress) } }),
    },
  };
}

/**
 * `<mailto:address?subject=unsubscribe>` (RFC 2369, RFC 6068): the address percent-encoded but for
 * the characters a mailto URI takes as they are, so the prepared header is ASCII and one line. No
 * `List-Unsubscribe-Post`: RFC 8058 one-click needs an https URI.
 */
function listUnsubscribe(address: string): string {
  const { address: checked } = checkedAddress('unsubscribe', { email: address });
  const encoded = Array.from(Buffer.from(checked, 'utf8'))
    .map((byte) => {
      const c = String.fromCharCode(byte);
      return /[A-Za-z0-9._~!$'()*+;:@-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
  return `<mailto:${encoded}?subject=unsubscribe>`;
}

const emailSchema = z.email();

function checkedAddress(field: string, address: MailAddress): Mail.Address {
  // zod's email takes no punycode TLD (xn--p1ai, .рф): an address of ours (isEmailAddress) passes too.
  if (!emailSchema.safeParse(address.email).success && !isEmailAddress(address.email)) {
    throw new MailerError(`invalid ${field} address: ${JSON.stringify(address.email)}`, true);
  }
  return { address: address.email, name: address.name ?? '' };
}

/** The key becomes a file name: nothing that could leave the folder or hide the file. */
function checkedMessageKey(key: string): string {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(key)) {
    throw new MailerError(`outbox: message key ${JSON.stringify(key)} is not a safe file name`, true);
  }
  return key;
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file, constants.F_OK).then(
    () => true,
    () => false,
  );
}

/**
 * Writes a hidden temp file, syncs it (the caller records "sent" once this returns), then
 * hard-links it into place. Unlike rename, link fails when the target exists, so two
 * concurrent hand-overs of one message still leave exactly one, complete file.
 */
async function writeOnce(target: string, content: Buffer): Promise<void> {
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomUUID()}.tmp`);
  const handle = await fs.open(temp, 'wx');
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.link(temp, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await fs.rm(temp, { force: true });
  }
}
