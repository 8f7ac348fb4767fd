import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type Client, type TestService } from '../support/service.js';
import { startSmtpServer, type ScriptedReply, type SmtpTestServer } from '../support/smtp-server.js';
import { eventually, type Receiver } from '../webhooks/receiver.js';
import { invitedGuest } from '../support/flows.js';

/**
 * The send worker on the SMTP mailer (SMTP_URL) against a real SMTP server (smtp-server) scripted to
 * fail one step of one send: the guest gets the invitation once at most, whatever is lost on the way.
 * A scripted failure applies to the next MAIL FROM, RCPT TO or end of data, so the cases run one at
 * a time, each waiting until its invitation has settled.
 */
const api = '/comms/v1/api/comms';
let smtp: SmtpTestServer;
let service: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  smtp = await startSmtpServer();
  service = await startTestService({
    WEBHOOK_ALLOW_INSECURE: 'true',
    // A short socket timeout (nodemailer's option, in the URL) for the server that never answers,
    // yet well above any stall of a loaded machine (which would fail another step by timeout).
    SMTP_URL: `${smtp.url}?socketTimeout=3000`,
    SEND_RETRY_DELAYS_MS: '50,50',
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service?.close();
  await smtp?.close();
});

const invite = (email: string) => invitedGuest(service, email, receivers);

/** The invitation once sent or failed (a retrying one is not settled yet). */
async function settled(client: Client, attendeeId: string) {
  return eventually(async () => {
    const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${attendeeId}`)).body.items;
    return item?.status === 'sent' || item?.status === 'failed' ? item : undefined;
  }, 60_000, 'invitation sent or failed');
}

const emailsTo = (email: string) => smtp.received.filter((mail) => mail.envelope.to.includes(email));

async function sendFailingOnce(email: string, failure: ScriptedReply) {
  smtp.failNext(failure);
  const { client, receiver, guestId } = await invite(email);
  const invitation = await settled(client, guestId);
  const [delivery] = await receiver.waitFor(1);
  return { invitation, delivery: delivery!.body };
}

describe('SMTP sends through the send worker', () => {
  it.each([
    ['never answers (the socket timeout)', 'hang'],
    ['closes the connection', 'close'],
  ] as const)('a server that takes the whole message and then %s: outcome_unknown, reported once, never sent again', async (_what, drop) => {
    const email = `unanswered-${drop}@example.com`;
    const { invitation, delivery } = await sendFailingOnce(email, { at: 'DATA', drop });
    expect(invitation).toMatchObject({ status: 'failed', attempts: 1 });
    expect(invitation.error).toMatch(/^outcome_unknown: SMTP: .*may have accepted it/);
    expect(delivery).toMatchObject({ type: 'comms.failed', data: { status: 'failed', error: expect.stringMatching(/^outcome_unknown/) } });
    expect(emailsTo(email)).toHaveLength(1);
  }, 40_000);

  it('a connection dropped at RCPT TO (nothing sent yet) is retried and delivered once', async () => {
    const email = 'dropped-at-rcpt@example.com';
    const { invitation, delivery } = await sendFailingOnce(email, { at: 'RCPT', drop: 'close' });
    expect(invitation).toMatchObject({ status: 'sent', attempts: 2 });
    const failed = invitation.history.filter((h: { type: string }) => h.type === 'attempt_failed') as { detail: string }[];
    expect(failed.map((h) => h.detail)).toEqual([expect.stringMatching(/^provider_unavailable: SMTP: /)]);
    expect(delivery).toMatchObject({ type: 'comms.sent' });
    expect(emailsTo(email)).toHaveLength(1);
  }, 40_000);

  it('a 451 to the end of data is an answer (not taken): retried and delivered once', async () => {
    const email = 'try-later@example.com';
    const { invitation, delivery } = await sendFailingOnce(email, { at: 'DATA', code: 451, message: 'Try again later' });
    expect(invitation).toMatchObject({ status: 'sent', attempts: 2 });
    const failed = invitation.history.filter((h: { type: string }) => h.type === 'attempt_failed') as { detail: string }[];
    expect(failed.map((h) => h.detail)).toEqual([expect.stringMatching(/^provider_unavailable: SMTP: .*451 Try again later/)]);
    expect(delivery).toMatchObject({ type: 'comms.sent' });
    expect(emailsTo(email)).toHaveLength(1);
  }, 40_000);

  it('a 550 to RCPT TO is final: provider_rejected after one attempt, nothing sent', async () => {
    const email = 'no-such-mailbox@example.com';
    const { invitation, delivery } = await sendFailingOnce(email, { at: 'RCPT', code: 550, message: 'Mailbox unavailable' });
    expect(invitation).toMatchObject({ status: 'failed', attempts: 1 });
    expect(invitation.error).toMatch(/^provider_rejected: SMTP: .*550 Mailbox unavailable/);
    expect(delivery).toMatchObject({ type: 'comms.failed', data: { status: 'failed' } });
    expect(emailsTo(email)).toEqual([]);
  }, 40_000);
});
