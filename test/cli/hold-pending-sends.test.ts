/**
 * `admin hold-pending-sends` (docs/operations.md, Backups and restores): a restored DATA_DIR in
 * which an invitation is still pending (the copy cannot know whether it went out after the backup)
 * must not email that guest again when the service starts on it.
 *
 * The pending invitation is made the real way: a service whose SMTP server refuses connections
 * keeps it retrying; that service stops, as the restored copy would hold it. The command runs as an
 * operator runs it (the real CLI on the DATA_DIR); then the service starts on the same DATA_DIR
 * with a mailer that works (the outbox), where, without the command, the retry would be sent.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { holdPendingSends, type HoldProgress } from '../../src/commands/hold-pending-sends.js';
import type { Services } from '../../src/commands/services.js';
import { loadConfig } from '../../src/config.js';
import { guestStream } from '../../src/domain/guest.js';
import { invitationStream } from '../../src/domain/invitation.js';
import { createPlatform } from '../../src/main.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { commsApi, commsSetup, sendTo, until } from '../support/flows.js';
import { clientToken, request, startTestService, type Client, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { refusedPort } from '../support/ports.js';

const run = promisify(execFile);
const temp: string[] = [];
const receivers: Receiver[] = [];
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  for (const dir of temp) fs.rmSync(dir, { recursive: true, force: true });
});

// The embedded stores of the DATA_DIR: the real servers' URLs CI exports would point the command elsewhere.
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const admin = async (dataDir: string, args: string[]) => {
  const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'admin.ts'), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    maxBuffer: 32 * 1024 * 1024,
  });
  return { result: JSON.parse(stdout) as { dryRun: boolean; held: number; checked: number; invitations: { attendeeInvitationId: string; status: string }[] }, stderr };
};

/** The test's webhook receiver is an http:// loopback address. */
const webhooksToLoopback = { WEBHOOK_ALLOW_INSECURE: 'true' };

/** The client's calls against a service started later on the same DATA_DIR (a new port). */
async function on(service: TestService, client: Client) {
  const token = await clientToken(service.url, client.id, client.clientSecret);
  return (method: string, pathname: string, body?: unknown) =>
    request(service.url, method, pathname, body, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey });
}

const invitationIn = (call: Awaited<ReturnType<typeof on>>, id: string, status: string[]) =>
  until(async () => {
    const reply = await call('GET', `${commsApi}/invitations/${id}`);
    return reply.status === 200 && status.includes(reply.body.status) ? (reply.body as Record<string, any>) : undefined;
  }, `invitation ${id} ${status.join(' or ')}`);

const outboxFile = (dataDir: string, invitationId: string) => {
  const dir = path.join(dataDir, 'outbox');
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => name.includes(invitationId)) : [];
};

describe('admin hold-pending-sends', () => {
  it('fails an invitation the copy shows pending as outcome_unknown, so the restored service never sends it; a sent one is left alone', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hold-'));
    temp.push(dataDir);
    const receiver = await startReceiver();
    receivers.push(receiver);

    // 1. A service that sends (the outbox): one invitation goes out and is settled.
    let service = await startTestService(webhooksToLoopback, { dataDir });
    let setup: Awaited<ReturnType<typeof commsSetup>>;
    let sentId: string;
    try {
      setup = await commsSetup(service);
      const webhook = await setup.client.call('POST', `${commsApi}/webhook`, { url: receiver.url });
      expect(webhook.body.secret).toEqual(expect.any(String));
      receiver.secret = webhook.body.secret;
      const guest = (email: string) => setup.client.call('POST', '/checkin/v1/api/guest', { eventId: setup.eventId, firstName: 'Ilse', email });
      const sentGuest = await guest('sent-before@example.com');
      [sentId] = await sendTo(setup, [sentGuest.body.id]);
      await invitationIn(await on(service, setup.client), sentId!, ['sent']);
    } finally {
      await service.stop();
    }
    expect(outboxFile(dataDir, sentId!)).toHaveLength(1);

    // 2. The same data with an SMTP server that refuses connections: the next invitation stays pending (retrying).
    service = await startTestService({ ...webhooksToLoopback, SMTP_URL: `smtp://127.0.0.1:${refusedPort}`, SEND_RETRY_DELAYS_MS: '1000,1000,1000,1000,1000,1000,1000,1000,1000,1000', SEND_LEASE_MS: '1000' }, { dataDir });
    let pendingId: string;
    let pendingGuestId: string;
    try {
      const call = await on(service, setup!.client);
      const pendingGuest = await call('POST', '/checkin/v1/api/guest', { eventId: setup!.eventId, firstName: 'Jonas', email: 'pending@example.com' });
      pendingGuestId = pendingGuest.body.id;
      const sent = await call('POST', `${commsApi}/send`, { templateId: setup!.templateId, attendeeIds: [pendingGuestId] });
      pendingId = sent.body.invitations[0].attendeeInvitationId;
      await invitationIn(call, pendingId, ['retrying']);
    } finally {
      await service.stop();
    }
    const stoppedAt = Date.now();

    // 3. The command, as an operator runs it before the service starts: --dry-run lists, changes nothing.
    const dry = await admin(dataDir, ['hold-pending-sends', '--dry-run']);
    expect(dry.result).toMatchObject({ dryRun: true, held: 1, invitations: [{ attendeeInvitationId: pendingId!, status: expect.stringMatching(/^(retrying|sending)$/) }] });
    const held = await admin(dataDir, ['hold-pending-sends']);
    expect(held.result).toMatchObject({ dryRun: false, held: 1, invitations: [{ attendeeInvitationId: pendingId! }] });
    expect(held.stderr).toContain('hold-pending-sends: 1 pending sends held as outcome_unknown');
    const again = await admin(dataDir, ['hold-pending-sends']);
    expect(again.result).toMatchObject({ held: 0, invitations: [] });

    // 4. The service on the restored data with a mailer that works.
    service = await startTestService(webhooksToLoopback, { dataDir });
    try {
      const call = await on(service, setup!.client);
      const invitation = await invitationIn(call, pendingId!, ['failed', 'sent']);
      expect(invitation.status).toBe('failed');
      expect(invitation.error).toMatch(/^outcome_unknown: the send was pending when the backup was taken .*POST \/comms\/v1\/api\/comms\/send/);
      // The webhook reports it as any outcome_unknown: comms.failed with data.error.
      const failed = await until(
        async () => receiver.deliveries.find((d) => d.body.type === 'comms.failed' && d.body.data.attendeeInvitationId === pendingId!),
        'comms.failed for the held invitation',
      );
      expect(failed.body.data).toMatchObject({ attendeeId: pendingGuestId!, status: 'failed', error: expect.stringMatching(/^outcome_unknown: /) });

      // Past when its retry (or its cut-short attempt's lease) would have been due, another send goes through: the worker had its turn, and did not send the held one.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, stoppedAt + 3000 - Date.now())));
      const later = await call('POST', '/checkin/v1/api/guest', { eventId: setup!.eventId, firstName: 'Kai', email: 'after-restore@example.com' });
      const [laterId] = (await call('POST', `${commsApi}/send`, { templateId: setup!.templateId, attendeeIds: [later.body.id] })).body.invitations.map(
        (i: { attendeeInvitationId: string }) => i.attendeeInvitationId,
      );
      await invitationIn(call, laterId, ['sent']);
      expect(outboxFile(dataDir, pendingId!)).toEqual([]);
      expect((await call('GET', `${commsApi}/invitations/${pendingId!}`)).body).toMatchObject({ status: 'failed' });

      // The invitation sent before is untouched: still sent, one email.
      expect((await call('GET', `${commsApi}/invitations/${sentId!}`)).body).toMatchObject({ status: 'sent' });
      expect(outboxFile(dataDir, sentId!)).toHaveLength(1);
    } finally {
      await service.stop();
    }
  }, 180_000);
});

describe('holdPendingSends on the event store', () => {
  it('holds a request the worker had not recorded and an attempt whose lease still runs; a sent one and a second run hold nothing', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hold-store-'));
    temp.push(dataDir);
    const platform = createPlatform(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', PII_ENCRYPTION: 'off' }), createLogger('silent'));
    const services: Services = { eventStore: platform.eventStore, readStore: platform.readStore, clock: systemClock, logger: createLogger('silent'), readYourWrites: async () => {} };
    try {
      const clientId = 'client-hold';
      const metadata = { tenantId: clientId, actor: { type: 'system' as const, id: 'test' }, correlationId: 'restore', occurredAt: new Date().toISOString() };
      const invitation = () => {
        const ids = { attendeeInvitationId: randomUUID(), clientId, attendeeId: randomUUID(), eventId: randomUUID(), templateId: randomUUID() };
        const requestedOnGuest = { id: randomUUID(), type: 'InvitationRequested', data: { guestId: ids.attendeeId, eventId: ids.eventId, attendeeInvitationId: ids.attendeeInvitationId, templateId: ids.templateId }, metadata };
        return { ids, requestedOnGuest };
      };
      const soon = new Date(Date.now() + 3_600_000).toISOString();
      const now = new Date().toISOString();
      // Requested on the guest; the copy was taken before the send worker recorded it.
      const onlyRequested = invitation();
      await platform.eventStore.append(guestStream(clientId, onlyRequested.ids.attendeeId), [onlyRequested.requestedOnGuest], 'any');
      // An attempt in progress, its lease still running.
      const sending = invitation();
      await platform.eventStore.append(guestStream(clientId, sending.ids.attendeeId), [sending.requestedOnGuest], 'any');
      await platform.eventStore.append(invitationStream(sending.ids.attendeeInvitationId), [
        { id: randomUUID(), type: 'SendRequested', data: { ...sending.ids, requestedAt: now }, metadata },
        { id: randomUUID(), type: 'SendStarted', data: { attendeeInvitationId: sending.ids.attendeeInvitationId, attempt: 1, to: 'x@example.com', at: now, leaseUntil: soon }, metadata },
      ], 'no_stream');
      // Sent: settled.
      const sent = invitation();
      await platform.eventStore.append(guestStream(clientId, sent.ids.attendeeId), [sent.requestedOnGuest], 'any');
      await platform.eventStore.append(invitationStream(sent.ids.attendeeInvitationId), [
        { id: randomUUID(), type: 'SendRequested', data: { ...sent.ids, requestedAt: now }, metadata },
        { id: randomUUID(), type: 'SendStarted', data: { attendeeInvitationId: sent.ids.attendeeInvitationId, attempt: 1, to: 'y@example.com', at: now, leaseUntil: soon }, metadata },
        { id: randomUUID(), type: 'SendSucceeded', data: { ...sent.ids, attempt: 1, to: 'y@example.com', provider: 'sendgrid', providerMessageId: 'm1', sentAt: now, attachedPdf: false }, metadata },
      ], 'no_stream');

      const progress: HoldProgress[] = [];
      const dry = await holdPendingSends(services, { dryRun: true, pageSize: 2, onProgress: (p) => progress.push(p) });
      expect(dry).toMatchObject({ dryRun: true, held: 2, checked: 2 });
      expect(progress.some((p) => p.phase === 'reading invitation events' && p.position === p.head)).toBe(true);
      expect(await platform.eventStore.readStream(invitationStream(onlyRequested.ids.attendeeInvitationId))).toEqual([]);

      const held = await holdPendingSends(services);
      expect(held.held).toBe(2);
      expect(held.invitations).toEqual(expect.arrayContaining([
        expect.objectContaining({ attendeeInvitationId: onlyRequested.ids.attendeeInvitationId, status: 'none', attempts: 0 }),
        expect.objectContaining({ attendeeInvitationId: sending.ids.attendeeInvitationId, status: 'sending', attempts: 1 }),
      ]));
      const recorded = await platform.eventStore.readStream(invitationStream(onlyRequested.ids.attendeeInvitationId));
      expect(recorded.map((e) => e.type)).toEqual(['SendRequested', 'SendFailed']);
      expect(recorded[1]!.data).toMatchObject({ ...onlyRequested.ids, code: 'outcome_unknown', error: expect.stringMatching(/^outcome_unknown: the send was pending/) });
      expect((await platform.eventStore.readStream(invitationStream(sending.ids.attendeeInvitationId))).at(-1)).toMatchObject({ type: 'SendFailed', data: { code: 'outcome_unknown', attempts: 1 } });
      expect((await platform.eventStore.readStream(invitationStream(sent.ids.attendeeInvitationId))).map((e) => e.type)).toEqual(['SendRequested', 'SendStarted', 'SendSucceeded']);

      expect(await holdPendingSends(services)).toMatchObject({ held: 0, invitations: [] });
    } finally {
      await platform.close();
    }
  });
});
