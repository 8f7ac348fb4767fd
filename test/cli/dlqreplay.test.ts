/**
 * `admin dead-letters list|replay` on the embedded bus (docs/operations.md, Dead letters): a
 * consumer whose handler fails dead-letters a message; the operator lists it (without its personal
 * data), replays it once the cause is fixed, and the consumer handles it once; a second replay
 * publishes nothing. The commands run as an operator runs them (the real CLI, another process on
 * the same DATA_DIR), while the consumer runs here.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedBus } from '../../src/adapters/bus/embedded.js';
import { deadLetterTopic, isReadableBus, type BusMessage, type Consumer } from '../../src/adapters/bus/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { listDeadLetters, replayDeadLetters, replayedTopic } from '../../src/commands/dead-letters.js';
import { Metrics } from '../../src/observability/metrics.js';
import { pipelineProbe } from '../../src/observability/pipeline-lag.js';
import { createLogger } from '../../src/shared/logger.js';
import { topics } from '../../src/workers/topics.js';
import { eventually as until } from '../webhooks/receiver.js';
import { deadLetterMessage } from '../../src/adapters/bus/delivery.js';
import { invitationStream } from '../../src/domain/invitation.js';
import { commsSetup, sendTo } from '../support/flows.js';
import { startTestService } from '../support/service.js';

const run = promisify(execFile);
/** Hang guard, far above any real figure. */
const WAIT_MS = 30_000;
const eventually = (condition: () => boolean | Promise<boolean>, what: string) => until(async () => (await condition()) || undefined, WAIT_MS, what);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dlqreplay-'));
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

// The embedded stores of the DATA_DIR: the real servers' URLs CI exports would point the command elsewhere.
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const admin = (args: string[]) =>
  run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'admin.ts'), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    maxBuffer: 32 * 1024 * 1024,
  });

const group = 'dlqreplay-send-worker';
const topic = topics.invitations;
/** What the message carries that must never be printed (a personal field as the relay seals it, and a name). */
const personal = 'Ann Example';
let bus: EmbeddedBus;
let healed = false;
const handled: BusMessage[] = [];

beforeAll(async () => {
  // A DATA_DIR the service ran on: an event store and a bus.
  const store = new SqliteEventStore(path.join(dataDir, 'events.sqlite'));
  closers.push(() => store.close());
  bus = new EmbeddedBus(path.join(dataDir, 'bus.sqlite'), { pollIntervalMs: 50, logger: createLogger('silent') });
  closers.push(() => bus.close());
  const consumer: Consumer = await bus.consume({ groupId: group, topics: [topic], maxAttempts: 2, retryDelayMs: () => 10 }, async (message) => {
    // Fails until the cause is fixed; the error quotes an address, as a provider's refusal may.
    if (!healed) throw new Error('template not found for ann@example.com');
    handled.push(message);
  });
  closers.push(() => consumer.close());
  await bus.publish(topic, [
    {
      key: 'guest-0d7c4a1e-2b7e-4c39-9a4f-1f0f3c1f7a11',
      value: JSON.stringify({ id: 'evt-1', type: 'InvitationRequested', data: { personalData: 'sealed:v1:abc', firstName: personal } }),
      headers: { 'event-id': 'evt-1', 'event-type': 'InvitationRequested', 'tenant-id': 'client-1' },
    },
  ]);
  await eventually(async () => (await bus.heldMessages(deadLetterTopic(topic))) === 1, 'the message dead-lettered');
}, 60_000);

// Each command is a fresh `node --import tsx` (10-16 s on a loaded machine): the timeouts are hang guards only.
describe('admin dead-letters (embedded bus)', () => {
  it('lists a dead letter with its source, key, attempts and error, redacted, and without its value', async () => {
    const { stdout } = await admin(['dead-letters', 'list', '--topic', topic]);
    expect(stdout).not.toContain(personal);
    expect(stdout).not.toContain('sealed:v1');
    expect(stdout).not.toContain('ann@example.com');
    const listed = JSON.parse(stdout);
    expect(listed.bus).toBe('embedded');
    expect(listed.topics).toHaveLength(1);
    const [entry] = listed.topics;
    expect(entry).toMatchObject({ topic, deadLetterTopic: `${topic}.dlq`, held: 1, replayed: 0, waiting: 1, omitted: 0 });
    expect(entry.deadLetters).toHaveLength(1);
    expect(entry.deadLetters[0]).toMatchObject({
      kind: 'consumer',
      sourceTopic: topic,
      sourceOffset: '0',
      key: 'guest-0d7c4a1e-2b7e-4c39-9a4f-1f0f3c1f7a11',
      eventId: 'evt-1',
      eventType: 'InvitationRequested',
      tenantId: 'client-1',
      attempts: 2,
      error: 'template not found for [Redacted]',
    });
    expect(entry.deadLetters[0].id).toMatch(new RegExp(`^${topic.replace(/\./g, '\\.')}\\.dlq:\\d+:0$`));
    expect(Date.parse(entry.deadLetters[0].deadLetteredAt)).not.toBeNaN();
  }, 120_000);

  it('refuses a replay without --all or --ids, and ids it does not hold, changing nothing', async () => {
    await expect(admin(['dead-letters', 'replay'])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('dead-letters replay needs --all or --ids') });
    await expect(admin(['dead-letters', 'replay', '--ids', `${topic}.dlq:0:99`])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`no dead letter ${topic}.dlq:0:99 is held on this bus (embedded)`),
    });
    await expect(admin(['dead-letters', 'list', '--all'])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('dead-letters list does not take --all') });
    expect(await bus.heldMessages(topic)).toBe(1);
    expect(await bus.heldMessages(replayedTopic(topic))).toBe(0);
  }, 240_000);

  it('replays it once the handler works: handled once; a second replay publishes nothing; --dry-run changes nothing', async () => {
    const dry = await admin(['dead-letters', 'replay', '--all', '--dry-run']);
    const dryRun = JSON.parse(dry.stdout);
    expect(dryRun).toMatchObject({ dryRun: true, alreadyReplayed: [], skipped: [] });
    expect(dryRun.replayed).toHaveLength(1);
    expect(await bus.heldMessages(topic)).toBe(1);
    expect(handled).toHaveLength(0);

    healed = true;
    const first = await admin(['dead-letters', 'replay', '--all']);
    const replayed = JSON.parse(first.stdout);
    expect(replayed).toMatchObject({ bus: 'embedded', dryRun: false, alreadyReplayed: [], skipped: [] });
    expect(replayed.replayed).toEqual(dryRun.replayed);
    // Progress and the summary on stderr, as JSON lines.
    expect(first.stderr).toContain('dead-letters replay: progress');
    expect(first.stderr).toContain('dead-letters replay: 1 dead letters replayed, 0 replayed before, 0 skipped');
    await eventually(() => handled.length === 1, 'the replayed message handled');
    expect(handled[0]).toMatchObject({ topic, key: 'guest-0d7c4a1e-2b7e-4c39-9a4f-1f0f3c1f7a11' });
    expect(handled[0]!.headers['event-id']).toBe('evt-1');
    expect(handled[0]!.headers['x-replayed-from']).toBe(replayed.replayed[0]);
    expect(Object.keys(handled[0]!.headers).filter((name) => name.startsWith('x-dlq-'))).toEqual([]);

    const second = JSON.parse((await admin(['dead-letters', 'replay', '--all'])).stdout);
    expect(second).toMatchObject({ replayed: [], alreadyReplayed: replayed.replayed, skipped: [] });
    // Nothing new on the source topic (the original and one replay), and the group has read all of it.
    expect(await bus.heldMessages(topic)).toBe(2);
    await eventually(async () => (await bus.consumerLag(group, [topic]))[0]!.messages === 0, 'the group caught up');
    expect(handled).toHaveLength(1);

    const listed = JSON.parse((await admin(['dead-letters', 'list'])).stdout);
    const invitations = listed.topics.find((t: { topic: string }) => t.topic === topic);
    expect(invitations).toMatchObject({ held: 1, replayed: 1, waiting: 0 });
    expect(invitations.deadLetters[0].replayedAt).toBeTypeOf('string');
  }, 240_000);

  it('counts dead letters per topic in /metrics (bus_dead_letters, bus_dead_letters_replayed)', async () => {
    const metrics = new Metrics();
    metrics.watchPipeline(
      pipelineProbe({
        eventStore: undefined as never,
        readStore: undefined as never,
        bus,
        projections: [],
        relayCheckpoint: 'relay',
        consumers: [],
        deadLetterTopics: [topic, topics.commsEvents],
        webhookDeliveries: 'webhook_deliveries',
      }),
    );
    const text = await metrics.render();
    expect(text).toContain(`bus_dead_letters{topic="${topic}"} 1`);
    expect(text).toContain(`bus_dead_letters_replayed{topic="${topic}"} 1`);
    expect(text).toContain(`bus_dead_letters{topic="${topics.commsEvents}"} 0`);
    expect(text).toContain('metrics_probe_failures_total{probe="dead_letters"} 0');
  });

  it('leaves a webhook delivery\'s dead letter to the redeliver API, and replays only the ids asked for', async () => {
    const other = new EmbeddedBus(':memory:');
    closers.push(() => other.close());
    await other.publish(deadLetterTopic(topics.commsEvents), [
      { key: 'invitation-1', value: '{}', headers: { 'x-dlq-error': 'HTTP 500', 'x-dlq-attempts': '8', 'x-dlq-source-topic': topics.commsEvents, 'x-webhook-id': 'wh-1' } },
      { key: 'invitation-2', value: '{"a":1}', headers: { 'x-dlq-error': 'boom', 'x-dlq-attempts': '5', 'x-dlq-source-topic': topics.commsEvents, 'x-dlq-source-partition': '0', 'x-dlq-source-offset': '4' } },
      { key: 'invitation-3', value: '{"a":2}', headers: { 'x-dlq-error': 'boom', 'x-dlq-attempts': '5', 'x-dlq-source-topic': topics.commsEvents, 'x-dlq-source-partition': '0', 'x-dlq-source-offset': '5' } },
    ]);
    const { topics: [listed] } = await listDeadLetters(other, { topics: [topics.commsEvents], limit: 100 });
    const [webhook, second, third] = ['invitation-1', 'invitation-2', 'invitation-3'].map((key) => listed!.deadLetters.find((l) => l.key === key)!);
    expect(webhook).toMatchObject({ kind: 'webhook-delivery', webhookDeliveryId: 'wh-1', notReplayable: expect.stringContaining('redeliver') });

    const some = await replayDeadLetters(other, { topics: [topics.commsEvents], ids: [webhook!.id, third!.id] });
    expect(some).toMatchObject({ replayed: [third!.id], alreadyReplayed: [], skipped: [{ id: webhook!.id }] });
    const all = await replayDeadLetters(other, { topics: [topics.commsEvents] });
    expect(all).toMatchObject({ replayed: [second!.id], alreadyReplayed: [third!.id], skipped: [{ id: webhook!.id }] });
    const source = await other.readTopic(topics.commsEvents);
    expect(source.map((m) => m.key).sort()).toEqual(['invitation-2', 'invitation-3']);
  });
});

describe('dead-letters replay to the real send worker', () => {
  it('never emails a guest twice: an invitation request replayed after its email went out is reported skipped, and the outbox keeps one email', async () => {
    const service = await startTestService();
    closers.push(() => service.close());
    const setup = await commsSetup(service);
    const guest = await setup.client.call('POST', '/checkin/v1/api/guest', { eventId: setup.eventId, firstName: 'Ilse', email: 'ilse@example.com' });
    const [invitationId] = await sendTo(setup, [guest.body.id]);
    const outbox = () => fs.readdirSync(path.join(service.dataDir, 'outbox')).filter((name) => name.includes(invitationId!));
    const types = async () => (await service.platform.eventStore.readStream(invitationStream(invitationId!))).map((e) => e.type);
    await eventually(async () => (await types()).includes('SendSucceeded'), 'the invitation sent');
    expect(outbox()).toHaveLength(1);

    // Its request, dead-lettered as a consumer would (say a redelivery that met a store outage).
    const bus = service.platform.bus;
    if (!isReadableBus(bus)) throw new Error(`the service's bus (${bus.kind}) cannot be read`);
    const requests = (await bus.readTopic(topics.invitations)).filter((m) => m.value.includes(invitationId!));
    expect(requests).toHaveLength(1);
    const [request] = requests;
    await bus.publish(deadLetterTopic(topics.invitations), [
      deadLetterMessage({ ...request!, topic: topics.invitations, attempt: 5 }, new Error('event store unavailable'), 5),
    ]);

    const replayed = await replayDeadLetters(bus, { topics: [topics.invitations] });
    expect(replayed.replayed).toHaveLength(1);
    await eventually(async () => (await types()).includes('SendSkipped'), 'the replayed request reported skipped');
    const events = await service.platform.eventStore.readStream(invitationStream(invitationId!));
    expect(events.filter((e) => e.type === 'SendSucceeded')).toHaveLength(1);
    expect(events.find((e) => e.type === 'SendSkipped')!.data).toMatchObject({ reason: 'already_sent' });
    expect(outbox()).toHaveLength(1);
  }, 120_000);
});
