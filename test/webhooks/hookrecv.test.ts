/**
 * Webhooks as an integrator's receiver sees them (branch hookrecv): a receiver written in Python
 * from the interface spec's "Events" section alone (./hookrecv_receiver.py: stdlib http.server,
 * hmac, hashlib), driven by the real service. It verifies every delivery as the spec says (raw
 * bytes, t within 300 s, HMAC-SHA256 hex over "t.body", constant-time compare), answers 401 to
 * what fails, dedupes on X-Service-Webhook-Id, and reports every disagreement between what arrived
 * and the spec's header and body tables. Any such disagreement fails these tests.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';
import { eventually } from './receiver.js';

const here = path.dirname(fileURLToPath(import.meta.url));
// The receivers run as child processes: a machine without python3 or go skips that receiver's tests (stated
// here; both are on this project's CI machine, so they run there).
const python = spawnSync('python3', ['--version']).status === 0;
const go = spawnSync('go', ['version']).status === 0;
const goBinary = path.join(os.tmpdir(), `hookrecv-go-${process.pid}`, 'receiver');
const api = '/comms/v1/api/comms';
const delaysMs = [200, 400, 800, 50, 50, 50, 50, 50, 50];
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
// Attempts held by the receiver stay in flight well past any stall of a loaded machine.
const env = {
  WEBHOOK_ALLOW_INSECURE: 'true',
  WEBHOOK_RETRY_DELAYS_MS: delaysMs.join(','),
  WEBHOOK_TIMEOUT_MS: '60000',
  SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
};

interface Arrival {
  receivedAt: number;
  t: number | null;
  verdict: string;
  signer: number | null;
  webhookId: string;
  event: string;
  body: string;
  answered: number;
  problems: string[];
  duplicate: boolean;
  held?: boolean;
}

interface ProcessReceiver {
  url: string;
  arrivals: Arrival[];
  control(command: Record<string, unknown>): Promise<void>;
  waitFor(count: number): Promise<Arrival[]>;
  close(): void;
}

const children: ChildProcessWithoutNullStreams[] = [];

const startPyReceiver = () => startReceiverProcess('python3', [path.join(here, 'hookrecv_receiver.py')]);

async function startReceiverProcess(command: string, args: string[]): Promise<ProcessReceiver> {
  const child = spawn(command, args);
  children.push(child);
  const arrivals: Arrival[] = [];
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`python receiver exited ${code}: ${stderr.join('')}`)));
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line);
      if (entry.listening) resolve(entry.listening);
      else arrivals.push(entry);
    });
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    url: `${base}/hook`,
    arrivals,
    control: async (command) => {
      const reply = await fetch(`${base}/_control`, { method: 'POST', body: JSON.stringify(command) });
      expect(reply.status).toBe(204);
    },
    waitFor: (count) =>
      eventually(async () => (arrivals.length >= count ? arrivals.slice(0, count) : undefined), 30_000, `${count} arrivals (got ${arrivals.length}: ${stderr.join('')})`),
    close: () => child.kill(),
  };
}

async function configured(client: Client, receiver: ProcessReceiver): Promise<string> {
  const reply = await client.call('POST', `${api}/webhook`, { url: receiver.url });
  expect(reply.status).toBe(200);
  await receiver.control({ secrets: [reply.body.secret] });
  return reply.body.secret as string;
}

async function settled(client: Client, webhookId: string) {
  return eventually(async () => {
    const reply = await client.call('GET', `${api}/webhook/deliveries/${webhookId}`);
    return reply.status === 200 && !['pending', 'retrying'].includes(reply.body.status) ? reply.body : undefined;
  }, 30_000, `delivery ${webhookId} settled`);
}

/** Everything the spec-reading receiver found wrong, with the delivery it was about. */
const disagreements = (arrivals: Arrival[]) => arrivals.filter((a) => a.problems.length > 0).map((a) => ({ event: a.event, problems: a.problems }));

let service: TestService;
beforeAll(async () => {
  if (python) service = await startTestService(env);
});
afterAll(async () => {
  for (const child of children) child.kill();
  await service?.close();
});

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

// Skipped only where python3 (or go) is missing: the receivers are programs in those languages.
const languages = [
  { name: 'Python (stdlib only)', present: python, start: startPyReceiver },
  { name: 'Go (stdlib only)', present: go, start: () => startReceiverProcess(goBinary, []) },
];
describe.each(languages)('a receiver written from the spec in $name', ({ present, start }) => {
  beforeAll(() => {
    if (present && start !== startPyReceiver) {
      const built = spawnSync('go', ['build', '-o', goBinary, path.join(here, 'hookrecv_receiver.go')], { encoding: 'utf8' });
      expect(built.status, built.stderr).toBe(0);
    }
  }, 600_000);
  afterAll(() => fs.rmSync(path.dirname(goBinary), { recursive: true, force: true }));

  it.skipIf(!present)('verifies and accepts comms.test, sent, failed, delivered, bounced and dropped: headers, fields and types as the spec states', async () => {
    const client = await commsClient();
    const receiver = await start();
    await configured(client, receiver);

    // Beyond ASCII: the receiver verifies the raw UTF-8 bytes.
    const correlation = 'crm-ada-7 Zürich 東京 😀';
    const test = await client.call('POST', `${api}/webhook/test`, { correlationId: 'corr-test-1' });
    expect(test.status).toBe(200);
    const eventId = await newEvent(client);
    const template = await client.call('POST', `${api}/template`, { eventId, name: 'Invite', subject: 'Hello', html: '<p>Hello {{firstName}}</p>' });
    expect(template.status).toBe(200);
    const guest = await client.call('POST', '/checkin/v1/api/guest', {
      eventId, firstName: 'Ada', email: 'ada@example.com', commsTemplateId: template.body.id, correlationId: correlation,
    });
    expect(guest.status).toBe(200);
    const quiet = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', email: 'bo@example.com', commsTemplateId: template.body.id });
    expect(quiet.status).toBe(200);
    // No email: the send fails (comms.failed, data.error set).
    const noEmail = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Cy', commsTemplateId: template.body.id });
    expect(noEmail.status).toBe(200);

    const sent = (attendeeId: string) => receiver.arrivals.find((a) => a.event === 'comms.sent' && JSON.parse(a.body).data.attendeeId === attendeeId);
    await eventually(async () => sent(guest.body.id) && sent(quiet.body.id) && receiver.arrivals.some((a) => a.event === 'comms.failed'), 30_000, 'comms.sent twice, comms.failed');
    const invitationId = JSON.parse(sent(guest.body.id)!.body).data.attendeeInvitationId as string;
    const now = Math.floor(Date.now() / 1000);
    const quietInvitationId = JSON.parse(sent(quiet.body.id)!.body).data.attendeeInvitationId as string;
    const batch = [
      { email: 'ada@example.com', timestamp: now, event: 'delivered', sg_event_id: `d-${invitationId}`, attendeeInvitationId: invitationId },
      { email: 'ada@example.com', timestamp: now + 1, event: 'dropped', sg_event_id: `x-${invitationId}`, reason: 'Bounced Address', attendeeInvitationId: invitationId },
      { email: 'bo@example.com', timestamp: now, event: 'bounce', sg_event_id: `b-${quietInvitationId}`, reason: '550 5.1.1 unknown', attendeeInvitationId: quietInvitationId },
    ];
    expect((await postSendGridEvents(service.url, privateKey, batch)).status).toBe(200);
    // SendGrid posting the same batch again is the same events: the same webhook ids, no second delivery.
    expect((await postSendGridEvents(service.url, privateKey, batch)).status).toBe(200);
    const types = ['comms.test', 'comms.sent', 'comms.failed', 'comms.delivered', 'comms.dropped', 'comms.bounced'];
    await eventually(async () => types.every((type) => receiver.arrivals.some((a) => a.event === type)), 30_000, 'every event type');
    const listed = (await client.call('GET', `${api}/events?limit=100`)).body.items as { id: string; type: string }[];
    expect(listed.map((e) => e.type).sort()).toEqual(['comms.bounced', 'comms.delivered', 'comms.dropped', 'comms.failed', 'comms.sent', 'comms.sent', 'comms.test']);
    await eventually(async () => receiver.arrivals.length >= listed.length, 30_000, 'every listed event delivered');
    expect(receiver.arrivals.map((a) => a.webhookId).sort()).toEqual(listed.map((e) => e.id).sort());

    const arrivals = receiver.arrivals;
    expect(arrivals.map((a) => a.verdict)).toEqual(arrivals.map(() => 'ok'));
    expect(disagreements(arrivals)).toEqual([]);
    expect(arrivals.every((a) => a.answered === 200 && !a.duplicate)).toBe(true);
    const bodyOf = (type: string) => JSON.parse(arrivals.find((a) => a.event === type)!.body);
    expect(bodyOf('comms.test')).toMatchObject({ id: test.body.webhookId, type: 'comms.test', data: { status: 'test', error: null, correlationId: 'corr-test-1' } });
    expect(JSON.parse(sent(guest.body.id)!.body).data).toEqual({
      attendeeId: guest.body.id, templateId: template.body.id, attendeeInvitationId: invitationId, status: 'sent', error: null, correlationId: correlation,
    });
    // "echoed when one was given": none given, none echoed.
    expect(JSON.parse(sent(quiet.body.id)!.body).data).not.toHaveProperty('correlationId');
    expect(bodyOf('comms.delivered').data).toMatchObject({ attendeeId: guest.body.id, attendeeInvitationId: invitationId, status: 'delivered', error: null });
    expect(bodyOf('comms.dropped').data).toMatchObject({ attendeeId: guest.body.id, attendeeInvitationId: invitationId, status: 'dropped', error: expect.any(String) });
    expect(bodyOf('comms.bounced').data).toMatchObject({ attendeeId: quiet.body.id, status: 'bounced', error: null });
    expect(bodyOf('comms.failed').data).toMatchObject({ attendeeId: noEmail.body.id, templateId: template.body.id, status: 'failed', error: expect.any(String) });
    expect(Buffer.byteLength(sent(guest.body.id)!.body)).toBeGreaterThan(sent(guest.body.id)!.body.length);
  });

  it.skipIf(!present)('answers 500 three times: four arrivals with one webhook id, each freshly signed, waits at least the backoff, processed once', async () => {
    const client = await commsClient();
    const receiver = await start();
    await configured(client, receiver);
    await receiver.control({ answers: [500, 500, 500] });
    const test = await client.call('POST', `${api}/webhook/test`);
    const delivery = await settled(client, test.body.webhookId);
    expect(delivery.status).toBe('delivered');
    const arrivals = await receiver.waitFor(4);
    expect(arrivals.map((a) => a.webhookId)).toEqual(Array(4).fill(test.body.webhookId));
    expect(arrivals.map((a) => [a.verdict, a.answered, a.duplicate])).toEqual([['ok', 500, false], ['ok', 500, false], ['ok', 500, false], ['ok', 200, false]]);
    expect(new Set(arrivals.map((a) => a.body)).size).toBe(1);
    expect(disagreements(arrivals)).toEqual([]);
    const log = delivery.attemptLog as { attemptedAt: string; statusCode: number }[];
    expect(log.map((a) => a.statusCode)).toEqual([500, 500, 500, 200]);
    // Exponential backoff: each wait at least the configured delay (jitter only stretches it).
    log.slice(1).forEach((a, i) => expect(Date.parse(a.attemptedAt) - Date.parse(log[i]!.attemptedAt)).toBeGreaterThanOrEqual(delaysMs[i]!));

    // A redelivery is the same event: the receiver's dedupe on X-Service-Webhook-Id catches it.
    expect((await client.call('POST', `${api}/webhook/deliveries/${test.body.webhookId}/redeliver`)).status).toBe(200);
    const [, , , , again] = await receiver.waitFor(5);
    expect(again).toMatchObject({ webhookId: test.body.webhookId, verdict: 'ok', duplicate: true, answered: 200 });
    expect(again!.body).toBe(arrivals[0]!.body);
  });
});

describe.skipIf(!python)('a receiver written from the spec (Python, stdlib only)', () => {

  it('answering 401 (verification failed, spec Signature 5) ends the delivery as failed: no retry; redeliver sends it again', async () => {
    const client = await commsClient();
    const receiver = await startPyReceiver();
    const secret = await configured(client, receiver);
    await receiver.control({ secrets: ['whsec_not-the-one-the-service-gave'] });
    const test = await client.call('POST', `${api}/webhook/test`);
    const delivery = await settled(client, test.body.webhookId);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: 401 });
    const [refused] = await receiver.waitFor(1);
    expect(refused).toMatchObject({ verdict: 'signature mismatch', answered: 401 });

    await receiver.control({ secrets: [secret] });
    expect((await client.call('POST', `${api}/webhook/deliveries/${test.body.webhookId}/redeliver`)).status).toBe(200);
    expect((await settled(client, test.body.webhookId)).status).toBe('delivered');
    expect(receiver.arrivals).toHaveLength(2);
    expect(receiver.arrivals[1]).toMatchObject({ webhookId: test.body.webhookId, verdict: 'ok', answered: 200, problems: [] });
  });

  it('a 307 redirect is not followed: the delivery fails, the redirect target gets nothing', async () => {
    const client = await commsClient();
    const receiver = await startPyReceiver();
    await configured(client, receiver);
    await receiver.control({ answers: ['redirect'] });
    const test = await client.call('POST', `${api}/webhook/test`);
    const delivery = await settled(client, test.body.webhookId);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: 307 });
    expect(receiver.arrivals.map((a) => a.answered)).toEqual([307]);
  });

  it('after rotate returns, nothing arrives signed with the old secret: a delivery in flight at the rotation is retried with the new one', async () => {
    const client = await commsClient();
    const receiver = await startPyReceiver();
    const oldSecret = await configured(client, receiver);
    // The first attempt is held open by the receiver across the rotation, then answered 500.
    await receiver.control({ answers: [{ hold: true, status: 500 }] });
    const test = await client.call('POST', `${api}/webhook/test`);
    const [first] = await receiver.waitFor(1);
    expect(first).toMatchObject({ verdict: 'ok', signer: 0, held: true });
    const rotated = await client.call('POST', `${api}/webhook/rotate`);
    expect(rotated.status).toBe(200);
    const rotatedAt = Date.now() / 1000;
    // The integrator now trusts the new secret only; the old one is listed to tell who signed.
    await receiver.control({ secrets: [rotated.body.secret, oldSecret], release: true });
    const delivery = await settled(client, test.body.webhookId);
    expect(delivery.status).toBe('delivered');
    const second = await client.call('POST', `${api}/webhook/test`);
    expect((await settled(client, second.body.webhookId)).status).toBe('delivered');

    const after = receiver.arrivals.filter((a) => a.receivedAt > rotatedAt);
    expect(after.length).toBeGreaterThanOrEqual(2);
    expect(after.map((a) => [a.signer, a.verdict])).toEqual(after.map(() => [0, 'ok']));
    expect(after.map((a) => a.webhookId)).toEqual([test.body.webhookId, second.body.webhookId]);
    expect(disagreements(receiver.arrivals)).toEqual([]);
  });
});

describe.skipIf(!python)('a slow receiver (Python, stdlib only)', () => {
  let slowService: TestService;
  beforeAll(async () => {
    slowService = await startTestService({ ...env, WEBHOOK_TIMEOUT_MS: '2000' });
  });
  afterAll(async () => {
    await slowService?.close();
  });

  it('one that answers after the timeout gets the event again with the same id, and its dedupe keeps it to one processing', async () => {
    const client = await createClient(slowService, { commsApiEnabled: true, senderTrusted: true });
    const receiver = await startPyReceiver();
    const reply = await client.call('POST', `${api}/webhook`, { url: receiver.url });
    await receiver.control({ secrets: [reply.body.secret], answers: [{ hold: true, status: 200 }] });
    const test = await client.call('POST', `${api}/webhook/test`);
    // Held (processed, not yet answered) until the retry has come.
    const [held, retry] = await receiver.waitFor(2);
    await receiver.control({ release: true });
    expect(held).toMatchObject({ webhookId: test.body.webhookId, verdict: 'ok', held: true, duplicate: false });
    expect(retry).toMatchObject({ webhookId: test.body.webhookId, verdict: 'ok', duplicate: true, answered: 200 });
    expect(retry!.body).toBe(held!.body);
    const delivery = await eventually(async () => {
      const got = await client.call('GET', `${api}/webhook/deliveries/${test.body.webhookId}`);
      return got.body.status === 'delivered' ? got.body : undefined;
    }, 30_000, 'delivered');
    expect(delivery.attemptLog[0].error).toContain('no response within 2000 ms');
    expect(delivery.attemptLog[1].statusCode).toBe(200);
  });
});
