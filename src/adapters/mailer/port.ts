/**
 * The mailer port (docs/invitations.md): hands one email to a delivery provider.
 * Adapters: SendGrid (`sendgrid.ts`, real provider), outbox folder of `.eml` files
 * (`outbox.ts`, embedded default), SMTP (`smtp.ts`, when SMTP_URL is set).
 */

export interface MailAddress {
  email: string;
  name?: string;
}

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
  /**
   * Set for an inline image the html shows with `<img src="cid:<contentId>">` (the ticket's
   * QR code and barcode): sent with `Content-Disposition: inline` and this Content-ID.
   */
  contentId?: string;
}

export interface MailMessage {
  /**
   * Stable key of this message: the attendeeInvitationId. The outbox names its file by it,
   * so a repeated hand-over of the same message writes nothing new; providers get it back
   * in their event webhooks through `trackingArgs`.
   */
  messageKey: string;
  from: MailAddress;
  to: MailAddress;
  replyTo?: MailAddress;
  subject: string;
  html: string;
  /** Plain-text alternative. */
  text?: string;
  attachments?: MailAttachment[];
  /**
   * Small string values the provider echoes in its event webhooks (SendGrid `custom_args`, which
   * recipients never see). Only the SendGrid adapter passes them on: an SMTP server has no event
   * webhooks to echo them in, and every header it is given reaches the recipient.
   */
  trackingArgs?: Record<string, string>;
  /**
   * A mailbox that takes unsubscribe requests: SMTP and the outbox put it on the message as
   * `List-Unsubscribe: <mailto:...?subject=unsubscribe>` (RFC 2369). SendGrid leaves it out: there
   * the account's subscription tracking adds its own one-click unsubscribe (docs/invitations.md).
   */
  unsubscribeAddress?: string;
}

export interface MailReceipt {
  /**
   * The provider's id for the accepted message: SendGrid's `X-Message-Id`, the outbox's file
   * name (`<messageKey>.eml`), the Message-ID header the SMTP adapter sent.
   */
  providerMessageId: string;
}

/** What a MailerError adds for the sender's retry decision. */
export interface MailerErrorDetails {
  /**
   * The provider may have accepted the message although the hand-over failed (a timeout, or the
   * connection dropped after the request went out). Sending it again could deliver it twice.
   */
  outcomeUnknown?: boolean;
  /** The provider asked not to be called again before this many milliseconds (a rate limit's reset). */
  retryAfterMs?: number;
  /**
   * The provider refused our credentials (SendGrid 401 or a key-scope 403, an SMTP authentication
   * failure), not the message: what the operator has to fix. Nothing was accepted, so the send is held
   * and tried again (docs/invitations.md, Held on provider credentials).
   */
  credentialsRefused?: string;
}

/** The provider did not accept the message. `permanent`: sending the same message again cannot succeed. */
export class MailerError extends Error {
  readonly outcomeUnknown: boolean;
  readonly retryAfterMs?: number;
  readonly credentialsRefused?: string;

  constructor(
    message: string,
    readonly permanent: boolean,
    /** The provider's answer when there was one: HTTP status (SendGrid) or SMTP reply code. */
    readonly statusCode?: number,
    details: MailerErrorDetails = {},
  ) {
    super(message);
    this.name = 'MailerError';
    this.outcomeUnknown = details.outcomeUnknown ?? false;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.credentialsRefused !== undefined) this.credentialsRefused = details.credentialsRefused;
  }
}

export interface Mailer {
  readonly kind: 'outbox' | 'sendgrid' | 'smtp';
  /** Resolves once the provider accepted the message; rejects with MailerError otherwise. */
  send(message: MailMessage): Promise<MailReceipt>;
  /**
   * Removes what this adapter keeps of a message it took (the outbox's file), for a guest erased
   * while the message was being handed over. Adapters that keep nothing of a sent message lack it.
   */
  discard?(receipt: MailReceipt): Promise<void>;
  close(): Promise<void>;
}
