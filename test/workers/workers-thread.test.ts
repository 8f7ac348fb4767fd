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
import { addGuests, commsSetup, invitedGuest, sendTo, until } from '../support/flows.js';
import type { WorkersThread } from '../../src/workers/thread.js';
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

  it("hands the thread's committed rows to the main thread's event store, not only their position", async () => {
    const store = service.platform.embeddedEventStore!;
    const announced: { position: number; types: string[] }[] = [];
    const original = store.announceAppend.bind(store);
    store.announceAppend = (durablePosition, rows = []) => {
      announced.push({ position: durablePosition, types: rows.map((row) => row.type) });
      original(durablePosition, rows);
    };
    try {
      const { receiver } = await invitedGuest(service, 'cy@example.com', receivers);
      await receiver.waitFor(1, 30_000);
    } finally {
      store.announceAppend = original;
    }
    // The send's outcome is written by the thread; the main thread's subscribers read it from these rows.
    expect(announced.flatMap((a) => a.types)).toContain('SendSucceeded');
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

  it('starts a thread that died on its own again: every invitation of a burst it was sending goes out exactly once', async () => {
    const setup = await commsSetup(service);
    const ids = await addGuests(setup, 120, 'burst');
    const worker = service.workers[0] as WorkersThread;
    const first = worker.current();
    expect(first).toBeDefined();
    await sendTo(setup, ids);
    const outbox = path.join(service.dataDir, 'outbox');
    const burstMails = async () => (await readOutbox(outbox)).filter((m) => m.to.email.startsWith('burst-'));
    // Ended in the middle of the burst when the machine allows (some sent, not all); at any point it must hold.
    await until(async () => ((await burstMails()).length > 0 ? true : undefined), 'the first emails of the burst');
    await first!.terminate();
    // The main thread answers meanwhile.
    expect((await setup.client.call('GET', `/checkin/v1/api/guests/${setup.eventId}?limit=1`)).status).toBe(200);
    await until(async () => (worker.current() && worker.current() !== first ? true : undefined), 'a new workers thread');
    const mails = await until(async () => {
      const sent = await burstMails();
      return sent.length >= ids.length ? sent : undefined;
    }, 'every invitation of the burst', 120_000);
    const perAddress = new Map<string, number>();
    for (const mail of mails) perAddress.set(mail.to.email, (perAddress.get(mail.to.email) ?? 0) + 1);
    expect(perAddress.size).toBe(ids.length);
    expect([...perAddress.values()].every((count) => count === 1)).toBe(true);
    // The read model follows (rows of a thread ended before it announced them are found by the main thread's poll).
    const sentInvitations = async () => {
      const invitations = await setup.client.call('GET', `/comms/v1/api/comms/invitations?eventId=${setup.eventId}&limit=1000`);
      return (invitations.body.items as { status: string }[]).filter((i) => i.status === 'sent').length;
    };
    await until(async () => ((await sentInvitations()) === ids.length ? true : undefined), 'every invitation shown as sent');
    expect(await sentInvitations()).toBe(ids.length);
  });

  it('stops the thread with the service: its connections closed, nothing left running', async () => {
    const stopping = service.stop();
    await expect(stopping).resolves.toBeUndefined();
    service = undefined as unknown as TestService;
  });
});
