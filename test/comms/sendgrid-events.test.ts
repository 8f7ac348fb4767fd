import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sendgridReports, sendgridSignatureVerifier, signatureHeader, timestampHeader } from '../../src/adapters/mailer/sendgrid-events.js';

/**
 * The Signed Event Webhook as SendGrid sends it (docs: "Getting Started with the Event Webhook
 * Security Features"): ECDSA P-256 with SHA-256 over the timestamp header's value followed by the
 * raw body, the DER signature base64 in X-Twilio-Email-Event-Webhook-Signature, and the key shown
 * as base64 of the DER public key.
 */
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const shownKey = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const body = Buffer.from(JSON.stringify([{ email: 'zoë@example.com', event: 'delivered', sg_event_id: 'e1', attendeeInvitationId: 'x' }]));
const timestamp = '1764000000';
const signed = (payload: Buffer, ts = timestamp, key = privateKey) => sign('sha256', Buffer.concat([Buffer.from(ts), payload]), key).toString('base64');

describe('SendGrid Signed Event Webhook', () => {
  it('names the headers SendGrid sends', () => {
    expect([signatureHeader, timestampHeader]).toEqual(['x-twilio-email-event-webhook-signature', 'x-twilio-email-event-webhook-timestamp']);
  });

  it('verifies SendGrid signatures with the key as SendGrid shows it, or as PEM', () => {
    for (const key of [shownKey, publicKey.export({ type: 'spki', format: 'pem' }) as string]) {
      expect(sendgridSignatureVerifier(key)(body, signed(body), timestamp)).toBe(true);
    }
  });

  it('refuses a changed body, another timestamp, another key and a malformed signature, without throwing', () => {
    const verify = sendgridSignatureVerifier(shownKey);
    const changed = Buffer.from(body.toString().replace('delivered', 'bounce'));
    expect(verify(changed, signed(body), timestamp)).toBe(false);
    expect(verify(body, signed(body), '1764000001')).toBe(false);
    expect(verify(body, signed(body, timestamp, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey), timestamp)).toBe(false);
    expect(verify(body, 'not a signature', timestamp)).toBe(false);
    expect(verify(body, '', timestamp)).toBe(false);
  });
});

describe('SendGrid events', () => {
  it('are matched by the attendeeInvitationId custom argument SendGrid copies into each event, not by sg_message_id', () => {
    const reports = sendgridReports([
      { email: 'a@example.com', timestamp: 1764000000, event: 'bounce', type: 'bounce', reason: '550 5.1.1 unknown', sg_event_id: 'b1', sg_message_id: 'XMSGID.filterdrecv-1', attendeeInvitationId: 'ABC', clientId: 'c1', messageKey: 'ABC' },
      { email: 'a@example.com', timestamp: 1764000001, event: 'processed', sg_event_id: 'p1', attendeeInvitationId: 'abc' },
      { email: 'a@example.com', timestamp: 1764000002, event: 'delivered', sg_event_id: 'd1', sg_message_id: 'XMSGID.filterdrecv-1' },
    ]);
    expect(reports).toEqual([
      { attendeeInvitationId: 'abc', event: 'bounced', providerEventId: 'b1', email: 'a@example.com', at: '2025-11-24T16:00:00.000Z', reason: '550 5.1.1 unknown' },
    ]);
  });
});

describe('SendGrid drops', () => {
  const drop = (reason: string, id: string) => ({ email: 'a@example.com', timestamp: 1764000000, event: 'dropped', reason, status: '5.0.0', sg_event_id: id, attendeeInvitationId: 'abc' });

  it('a drop because the account is over its plan (Recipient List over Package Quota) does not suppress the address; a drop for the address does', () => {
    const reports = sendgridReports([drop('Recipient List over Package Quota', 'q1'), drop('Bounced Address', 'b1')]);
    expect(reports.map((r) => [r.providerEventId, r.suppresses])).toEqual([
      ['q1', false],
      ['b1', undefined],
    ]);
  });
});
