/**
 * Mailer adapter for any SMTP server (when SMTP_URL is set), through nodemailer. It renders
 * the message exactly as the outbox does (`mailOptions`), so the two produce the same email.
 */
import type { Readable } from 'node:stream';
import nodemailer, { type Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { mailOptions } from './outbox.js';
import { MailerError, type Mailer, type MailMessage, type MailReceipt } from './port.js';

/** How far one send got: set once the message's last byte went to the SMTP connection. */
export interface HandOver {
  bodyEnded: boolean;
}

/** The key under which a send's HandOver rides in the mail data nodemailer gives its plugins. */
const HAND_OVER = 'checkinHandOver';

export class SmtpMailer implements Mailer {
  readonly kind = 'smtp';
  private readonly transport: Transporter<SMTPTransport.SentMessageInfo>;

  /**
   * `url`: a nodemailer connection URL, e.g. `smtps://user:pass@smtp.example.com:465`. With
   * `smtp://` and a password, add `?requireTLS=true` unless the server is local: otherwise a
   * server without STARTTLS gets the password in clear text. Options in the URL's query
   * (`?socketTimeout=60000`) win over `timeoutMs`.
   */
  constructor(url: string, options: { timeoutMs?: number } = {}) {
    const timeout = options.timeoutMs ?? 30_000;
    // nodemailer's own defaults let a stuck server hold a send for up to 10 minutes. The timeouts
    // are transport options: createTransport(url, x) would take x as message defaults and drop them.
    this.transport = nodemailer.createTransport(new SMTPTransport({ url, connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout }));
    this.transport.use('stream', (mail, done) => {
      const handOver = (mail.data as { [HAND_OVER]?: HandOver })[HAND_OVER];
      if (handOver) mail.message.processFunc((output) => watchEnd(output, handOver));
      done();
    });
  }

  async send(message: MailMessage): Promise<MailReceipt> {
    const handOver: HandOver = { bodyEnded: false };
    const options: Mail.Options & { [HAND_OVER]: HandOver } = { ...mailOptions(message), [HAND_OVER]: handOver };
    // The callback, not the promise: the step is read as nodemailer reports the failure. (After an
    // error mid-message the rest of it may still drain into the dead connection's stream.)
    const info = await new Promise<SMTPTransport.SentMessageInfo>((resolve, reject) => {
      this.transport.sendMail(options, (error, sent) => (error ? reject(smtpError(error, { ...handOver })) : resolve(sent)));
    });
    // SMTP gives no provider id; the Message-ID the message went out with is the stable handle.
    return { providerMessageId: info.messageId };
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

/**
 * The message stream nodemailer hands to its SMTP connection, unchanged, noting when it ended.
 * It is read only after the server's 354 to DATA, by the connection's dot-stuffing stream, which
 * writes the end of data (`<CRLF>.<CRLF>`) to the socket as soon as this stream ends. (It is the
 * last stream of the message: this adapter sets no DKIM or `newline`, which nodemailer would add
 * after it.)
 */
function watchEnd(output: Readable, handOver: HandOver): Readable {
  output.once('end', () => {
    handOver.bodyEnded = true;
  });
  return output;
}

/**
 * What a failed send means for the retry decision (docs/invitations.md, Exactly one email):
 *
 * - A 4xx or 5xx reply is the server's answer, whichever command it answered: 5xx is its final
 *   "no" (RFC 5321 §4.2.1), 4xx may pass on another try. A reply to the end of data other than
 *   250 means the server did not take the message (§4.1.1.4).
 * - Anything else (a timeout, a reset, a closed connection, a reply that is no reply) before the
 *   whole message went to the connection: the server cannot have accepted it (it takes a message
 *   only at its end of data), so another try is safe.
 * - The same after the whole message went: the server may have accepted it and its 250 been lost.
 *   Another try could deliver it twice, so the outcome is unknown. nodemailer reports every
 *   socket timeout, reset and close as `command: 'CONN'` whatever the step, so the step comes from
 *   `handOver`, which errs on the side of unknown: it is set when the last bytes went to the
 *   connection, which may be a moment before the end of data reached the server.
 *
 * What nodemailer 7.0.9 (lib/smtp-connection) puts on its errors, by step:
 * - a reply it refuses: `response` and `responseCode`, `command` naming the step ('EHLO',
 *   'AUTH PLAIN', 'MAIL FROM', 'RCPT TO', 'DATA'), `code` EPROTOCOL/EAUTH/EENVELOPE, EMESSAGE for
 *   the reply to the end of data (also `command: 'DATA'`);
 * - a check before anything is sent (no recipient, a missing password): `command: 'API'`;
 * - at any step, the connection: `command: 'CONN'` with `code` ETIMEDOUT (the socket timeout;
 *   'Greeting never received', 'Connection timeout' before that), ESOCKET (a reset, EPIPE, a refused
 *   connection), EDNS, ECONNECTION ('Connection closed unexpectedly', with an unfinished reply line as
 *   `response` if there was one), ETLS; or the transport's 'Unexpected socket close' with neither.
 */
export function smtpError(error: unknown, handOver: HandOver = { bodyEnded: false }): MailerError {
  const { message, responseCode, code } = error as { message?: string; responseCode?: number; code?: unknown };
  const text = `SMTP: ${message ?? String(error)}`;
  // Our credentials, not the message (nodemailer's EAUTH: a refused AUTH such as 535 5.7.8, or no
  // password to offer; 530 5.7.0 "Authentication required" to MAIL FROM, RFC 4954 §6): nothing was
  // taken, so the send is held and tried again (send worker).
  if (code === 'EAUTH' || responseCode === 530) {
    const fix = 'check SMTP_URL: the user name and password (smtps://user:pass@host) the SMTP server accepts';
    return new MailerError(text, false, responseCode, { credentialsRefused: fix });
  }
  const replied = typeof responseCode === 'number' && responseCode >= 400 && responseCode < 600;
  if (replied) return new MailerError(text, responseCode >= 500, responseCode);
  if (handOver.bodyEnded) {
    return new MailerError(
      `${text} (after the whole message went to the server, which may have accepted it; it is not sent again)`,
      false,
      responseCode,
      { outcomeUnknown: true },
    );
  }
  return new MailerError(text, false, responseCode);
}
