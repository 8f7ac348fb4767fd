import { sign, type KeyObject } from 'node:crypto';

/**
 * Posts a batch of events to the service's SendGrid Event Webhook receiver, signed as SendGrid signs
 * them (ECDSA over the timestamp and the raw body, docs/invitations.md "Provider events").
 */
export function postSendGridEvents(
  baseUrl: string,
  privateKey: KeyObject,
  events: unknown[],
  options: { timestamp?: string } = {},
): Promise<Response> {
  const body = JSON.stringify(events);
  const timestamp = options.timestamp ?? String(Math.floor(Date.now() / 1000));
  return fetch(`${baseUrl}/comms/v1/api/comms/provider/sendgrid/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-twilio-email-event-webhook-signature': sign('sha256', Buffer.from(timestamp + body), privateKey).toString('base64'),
      'x-twilio-email-event-webhook-timestamp': timestamp,
    },
    body,
  });
}
