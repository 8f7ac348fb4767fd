/**
 * Personal data that reached the service by a path the main grep test's guest never takes: a mail
 * server's refusal quoting the recipient's address (SMTP servers do: `550 5.1.1 <ann@example.com>:
 * Recipient address rejected`). The refusal becomes the invitation's error (events, read models,
 * the webhook, the log); after the guest's erasure and a rebuild the address must be nowhere.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { startSmtpServer, type SmtpTestServer } from '../support/smtp-server.js';
import { eventually, type Receiver } from '../webhooks/receiver.js';
import { invitedGuest } from '../support/flows.js';
import { filesHolding } from '../support/files-holding.js';
import { loggedLines } from '../support/log-lines.js';

const comms = '/comms/v1/api/comms';
let smtp: SmtpTestServer;
let service: TestService;
const receivers: Receiver[] = [];
const logs = loggedLines('info');

beforeAll(async () => {
  smtp = await startSmtpServer();
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', SMTP_URL: smtp.url, SEND_RETRY_DELAYS_MS: '50,50' }, { logger: logs.logger });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service?.close();
  await smtp?.close();
});

/** The messages of the log lines that hold `text` (any case). */
const linesWith = (text: string) => logs.lines.filter((line) => JSON.stringify(line).toLowerCase().includes(text.toLowerCase())).map((line) => line.msg);

async function settled(client: Client, attendeeId: string) {
  // Hang guard only, far above any real figure.
  return eventually(async () => {
    const [item] = (await client.call('GET', `${comms}/invitations?attendeeId=${attendeeId}`)).body.items;
    return item?.status === 'failed' ? item : undefined;
  }, 30_000, 'invitation failed');
}

describe('a mail server refusal that quotes the recipient', () => {
  it('is the webhook’s and the invitation’s error while the guest exists, and after its erasure is nowhere under DATA_DIR (nor after a rebuild) nor in the log', async () => {
    const email = `refused.${randomUUID().slice(0, 8)}@example.com`;
    // The first attempt is told to try later, the second is refused for good: both quote the address.
    smtp.failNext({ at: 'RCPT', code: 451, message: `4.2.1 <${email}>: Recipient mailbox busy` });
    smtp.failNext({ at: 'RCPT', code: 550, message: `5.1.1 <${email}>: Recipient address rejected: User unknown` });
    const { client, receiver, guestId } = await invitedGuest(service, email, receivers);
    const invitation = await settled(client, guestId);
    expect(invitation).toMatchObject({ status: 'failed', attempts: 2 });
    // While the guest exists, its owner sees what the server said (the webhook and the invitation).
    expect(invitation.error).toContain(`<${email}>: Recipient address rejected`);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.body).toMatchObject({ type: 'comms.failed', data: { error: expect.stringContaining(`<${email}>: Recipient address rejected`) } });
    const access = await client.call('GET', `/checkin/v1/api/guest/${guestId}/personal-data`);
    const attemptFailed = access.body.history.find((e: { type: string }) => e.type === 'SendAttemptFailed');
    expect(attemptFailed.data.error).toContain(`<${email}>: Recipient mailbox busy`);
    // The log says that it failed, with the code and the server's words, without the address.
    const failedLine = logs.lines.find((line) => line.msg === 'invitation send failed');
    expect(failedLine).toMatchObject({ code: 'provider_rejected', error: expect.stringContaining('Recipient address rejected') });
    expect(linesWith(email)).toEqual([]);

    const erased = await client.call('POST', `/checkin/v1/api/guest/${guestId}/erase`, { reason: 'art. 17' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(filesHolding(service.dataDir, [email])).toEqual([]);
    await service.runner!.rebuild([]);
    expect(filesHolding(service.dataDir, [email])).toEqual([]);
    // The failure stays a failure, with its code.
    const after = (await client.call('GET', `${comms}/invitations?attendeeId=${guestId}`)).body.items[0];
    expect(after).toMatchObject({ status: 'failed', attempts: 2, error: expect.stringMatching(/^provider_rejected/) });
    expect(linesWith(email)).toEqual([]);

    // Its failure's webhook body was sealed with the guest's key: a redelivery now fails, and sends nothing.
    const deliveryId = delivery!.body.id as string;
    const redelivered = await client.call('POST', `${comms}/webhook/deliveries/${deliveryId}/redeliver`);
    expect(redelivered.status, JSON.stringify(redelivered.body)).toBe(200);
    const dead = await eventually(async () => {
      const view = (await client.call('GET', `${comms}/webhook/deliveries/${deliveryId}`)).body;
      return view.status === 'failed' ? view : undefined;
    }, 30_000, 'redelivery failed');
    expect(JSON.stringify(dead)).toContain('personal data was erased');
    expect(JSON.stringify(dead).toLowerCase()).not.toContain(email);
    expect(receiver.deliveries).toHaveLength(1);
  }, 90_000);
});

describe('a correlationId that holds the guest’s email (a CRM that correlates by address)', () => {
  it('is replaced in the guest’s read model by its erasure (the events keep it, as docs/personal-data.md says)', async () => {
    const email = `corr.${randomUUID().slice(0, 8)}@example.com`;
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const created = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', email, correlationId: email });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ email, correlationId: email });
    const guestId = created.body.id as string;
    const erased = await client.call('POST', `/checkin/v1/api/guest/${guestId}/erase`, { reason: 'art. 17' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect((await client.call('GET', `/checkin/v1/api/guest/${guestId}`)).body.correlationId).toBe('[erased]');
    expect(filesHolding(service.dataDir, [email]).filter((file) => !file.startsWith('events.sqlite'))).toEqual([]);
  }, 90_000);
});
