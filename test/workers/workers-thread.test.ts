/**
 * WORKERS_THREAD=on (issue 13, goal 6): the send worker and the webhook dispatcher run on a worker
 * thread with their own connections to the event store's and bus's files, the main thread's read
 * store over a port. What a caller sees is the same: the email goes out once, comms.sent reaches
 * the webhook, the metrics count it, an erasure reaches the thread's key cache, and the service
 * stops cleanly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOutbox } from '../support/mail-readers.js';
import { startTestService, type TestService } from '../support/service.js';
import { invitedGuest, until } from '../support/flows.js';
import type { Receiver } from '../webhooks/receiver.js';

let service: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', WORKERS_THREAD: 'on' });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service?.close();
});

describe('the bus consumers on a thread of their own (WORKERS_THREAD=on)', () => {
  it('runs them on the thread: the main thread keeps only retention', () => {
    expect(service.workers.map((w) => w.name)).toEqual(['workers-thread', 'retention']);
  });

  it('sends the invitation once, delivers comms.sent to the webhook, and counts the send on /metrics', async () => {
    const { client, receiver, guestId } = await invitedGuest(service, 'ann@example.com', receivers);
    const [delivery] = await receiver.waitFor(1, 30_000);
    expect(delivery!.body).toMatchObject({ type: 'comms.sent', data: { attendeeId: guestId } });
    expect(delivery!.specVerified).toBe(true);
    const mail = await until(async () => {
      const sent = (await readOutbox(path.join(service.dataDir, 'outbox'))).filter((m) => m.to.email === 'ann@example.com');
      return sent.length > 0 ? sent : undefined;
    }, 'the outbox email');
    expect(mail).toHaveLength(1);
    const invitations = await client.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${guestId}`);
    expect(invitations.body.items).toEqual([expect.objectContaining({ status: 'sent' })]);
    // The thread's counters are forwarded to the main thread's registry.
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^invitation_sends_total\{outcome="sent",code=""\} [1-9]/m);
  });

  it('erases a guest whose invitation the thread sent: the guest’s email is gone from the outbox', async () => {
    const { client, receiver, guestId } = await invitedGuest(service, 'bo@example.com', receivers);
    await receiver.waitFor(1, 30_000);
    const erased = await client.call('POST', `/checkin/v1/api/guest/${guestId}/erase`, { reason: 'test' });
    expect(erased.status).toBe(200);
    const outbox = path.join(service.dataDir, 'outbox');
    const holding = fs.readdirSync(outbox).filter((f) => fs.readFileSync(path.join(outbox, f), 'utf8').includes('bo@example.com'));
    expect(holding).toEqual([]);
  });

  it('stops the thread with the service: its connections closed, nothing left running', async () => {
    const stopping = service.stop();
    await expect(stopping).resolves.toBeUndefined();
    service = undefined as unknown as TestService;
  });
});
