/**
 * Mailer adapter for any SMTP server (when SMTP_URL is set), through nodemailer. It renders
 * the message exactly as the outbox does (`mailOptions`), so the two produce the same email.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import { mailOptions } from './outbox.js';
import { MailerError, type Mailer, type MailMessage, type MailReceipt } from './port.js';

export class SmtpMailer implements Mailer {
  readonly kind = 'smtp';
  private readonly transport: Transporter;

  /**
   * `url`: a nodemailer connection URL, e.g. `smtps://user:pass@smtp.example.com:465`. With
   * `smtp://` and a password, add `?requireTLS=true` unless the server is local: otherwise a
   * server without STARTTLS gets the password in clear text.
   */
  constructor(url: string, options: { timeoutMs?: number } = {}) {
    const timeout = options.timeoutMs ?? 30_000;
    // nodemailer's own defaults let a stuck server hold a send for up to 10 minutes.
    this.transport = nodemailer.createTransport(url, { connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout });
  }

  async send(message: MailMessage): Promise<MailReceipt> {
    const options = mailOptions(message);
    try {
      const info = await this.transport.sendMail(options);
      // SMTP gives no provider id; the Message-ID the message went out with is the stable handle.
      return { providerMessageId: info.messageId };
    } catch (error) {
      throw smtpError(error);
    }
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

/**
 * A 5xx reply is the server's final "no" (RFC 5321 §4.2.1); 4xx replies, connection
 * failures and timeouts (no reply code) may pass on another try.
 */
export function smtpError(error: unknown): MailerError {
  const { message, responseCode } = error as { message?: string; responseCode?: number };
  const permanent = typeof responseCode === 'number' && responseCode >= 500;
  return new MailerError(`SMTP: ${message ?? String(error)}`, permanent, responseCode);
}
