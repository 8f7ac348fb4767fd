import sendgridEventWebhook from '@sendgrid/eventwebhook';
import type { ProviderEventType, ProviderReport } from '../../domain/invitation.js';
import { boundedErrorText } from '../../domain/invitation.js';

const { EventWebhook, EventWebhookHeader } = sendgridEventWebhook;

/**
 * SendGrid's Event Webhook (signed): the reports after SendGrid accepted an email. Our
 * sends carry `attendeeInvitationId` in `custom_args`, which SendGrid copies into each
 * event. Events with no counterpart in the spec (processed, deferred, click, ...) are left out.
 */
const eventTypes: Record<string, ProviderEventType> = {
  delivered: 'delivered',
  open: 'opened',
  bounce: 'bounced',
  dropped: 'dropped',
  spamreport: 'spam_reported',
  unsubscribe: 'unsubscribed',
  group_unsubscribe: 'unsubscribed',
};

export const signatureHeader = EventWebhookHeader.SIGNATURE().toLowerCase();
export const timestampHeader = EventWebhookHeader.TIMESTAMP().toLowerCase();

/** A verifier for the account's Event Webhook verification key (base64 DER or PEM, as SendGrid shows it). */
export function sendgridSignatureVerifier(publicKey: string): (rawBody: Buffer, signature: string, timestamp: string) => boolean {
  const webhook = new EventWebhook();
  const key = webhook.convertPublicKeyToECDSA(publicKey);
  return (rawBody, signature, timestamp) => {
    try {
      return webhook.verifySignature(key, rawBody, signature, timestamp);
    } catch {
      // A malformed signature is a failed verification, not a server error.
      return false;
    }
  };
}

/**
 * Whether a bounce or drop says the address cannot be emailed. SendGrid reports a block (the
 * receiving server refused the message for the sending IP's reputation or its content, often
 * for a while) as a `bounce` of `type: "blocked"`, and does not suppress the address itself;
 * it drops a message for its content (`Spam Content`), for a malformed request (`Invalid
 * SMTPAPI header`) or because the account is over its plan's quota (`Recipient List over
 * Package Quota`). Every other bounce and drop (`Bounced Address`, `Invalid`, `Unsubscribed
 * Address`, ...) is about the address.
 */
function aboutTheAddress(event: ProviderEventType, entry: Record<string, unknown>): boolean {
  if (event === 'bounced') return entry.type !== 'blocked';
  if (event === 'dropped') return !(typeof entry.reason === 'string' && /^(spam content|invalid smtpapi header|recipient list over package quota)/i.test(entry.reason));
  return true;
}

/** The reports in a verified Event Webhook body; entries that are not ours or not comms events are skipped. */
export function sendgridReports(body: unknown): ProviderReport[] {
  if (!Array.isArray(body)) return [];
  return body.flatMap((entry: Record<string, unknown>): ProviderReport[] => {
    const event = typeof entry?.event === 'string' ? eventTypes[entry.event] : undefined;
    const invitationId = entry?.attendeeInvitationId;
    const eventId = entry?.sg_event_id;
    if (!event || typeof invitationId !== 'string' || typeof eventId !== 'string' || typeof entry.email !== 'string') return [];
    const seconds = typeof entry.timestamp === 'number' ? entry.timestamp : Date.now() / 1000;
    const reason = [entry.reason, entry.response, entry.type].find((r) => typeof r === 'string' && r !== '') as string | undefined;
    return [
      {
        attendeeInvitationId: invitationId.toLowerCase(),
        event,
        providerEventId: eventId,
        email: entry.email,
        at: new Date(seconds * 1000).toISOString(),
        ...(reason ? { reason: boundedErrorText(reason) } : {}),
        ...(aboutTheAddress(event, entry) ? {} : { suppresses: false as const }),
        // SendGrid flags opens by Apple's Mail Privacy Protection proxy (which fetches every image at delivery).
        ...(event === 'opened' && entry.sg_machine_open === true ? { machineOpen: true as const } : {}),
      },
    ];
  });
}
