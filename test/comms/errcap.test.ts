import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { createClient, startTestService, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';
import { boundedErrorText, SEND_ERROR_TEXT_MAX } from '../../src/domain/invitation.js';
import { sendgridReports } from '../../src/adapters/mailer/sendgrid-events.js';

/**
 * A provider's failure text is bounded where it enters an invitation's events (docs/invitations.md,
 * "What a failure says"): it is repeated in the read model, each history answer and each webhook.
 */
const api = '/comms/v1/api/comms';
let service: TestService;
let sendgrid: SendGridDouble;
let receiver: Receiver;

beforeAll(async () => {
  sendgrid = await startSendGridDouble();
  receiver = await startReceiver();
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', SENDGRID_API_KEY: sendgrid.apiKey, SENDGRID_BASE_URL: sendgrid.url, SEND_RETRY_DELAYS_MS: '50,50' });
});
afterAll(async () => {
  await service.close();
  await receiver.close();
  await sendgrid.close();
});

describe('a send failure’s text', () => {
  it('keeps 2,000 characters of a provider’s long refusal and says how much it left out, in the answer and the webhook', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    receiver.secret = (await client.call('POST', `${api}/webhook`, { url: receiver.url })).body.secret;
    const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Expo', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
    const template = await client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Pass', subject: 'Hi', html: '<p>Hi</p>', fromAddress: 'expo@organizer.example' });
    expect(template.status).toBe(200);
    const refusal = `Refused: ${'x'.repeat(100_000)}`;
    sendgrid.failNext(400, refusal);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId: event.body.id, firstName: 'Kim', email: 'kim@example.com', commsTemplateId: template.body.id });
    const invitation = await eventually(async () => {
      const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${guest.body.id}`)).body.items;
      return item?.status === 'failed' ? item : undefined;
    }, 10_000, 'invitation failed');
    expect(invitation.error).toMatch(/^provider_rejected: SendGrid rejected the message \(400[^)]*\): Refused: x+… \(\d+ more characters left out\)$/);
    expect(invitation.error.length).toBeLessThan(SEND_ERROR_TEXT_MAX + 100);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.body).toMatchObject({ type: 'comms.failed', data: { error: invitation.error } });
  });

  it('is cut at a code point, never inside a surrogate pair, and short texts are kept whole', () => {
    expect(boundedErrorText('short')).toBe('short');
    const exact = 'a'.repeat(SEND_ERROR_TEXT_MAX);
    expect(boundedErrorText(exact)).toBe(exact);
    const text = `${'a'.repeat(SEND_ERROR_TEXT_MAX - 1)}😀tail`;
    const cut = boundedErrorText(text);
    expect(cut.startsWith(`${'a'.repeat(SEND_ERROR_TEXT_MAX - 1)}…`)).toBe(true);
    expect(cut).toBe(`${'a'.repeat(SEND_ERROR_TEXT_MAX - 1)}… (6 more characters left out)`);
  });
});

describe('a provider event’s reason', () => {
  it('keeps at most 2,000 characters of a bounce reason, as a send failure does', () => {
    const reason = `550 5.1.1 ${'y'.repeat(50_000)}`;
    const [report] = sendgridReports([{ event: 'bounce', attendeeInvitationId: '0193a5c0-0000-7000-8000-000000000001', sg_event_id: 'ev-1', email: 'kim@example.com', timestamp: 1_800_000_000, reason }]);
    expect(report!.reason).toBe(boundedErrorText(reason));
    expect(report!.reason).toMatch(/^550 5\.1\.1 y+… \(48010 more characters left out\)$/);
    const [short] = sendgridReports([{ event: 'bounce', attendeeInvitationId: '0193a5c0-0000-7000-8000-000000000001', sg_event_id: 'ev-2', email: 'kim@example.com', timestamp: 1_800_000_000, reason: '550 no such user' }]);
    expect(short!.reason).toBe('550 no such user');
  });
});
