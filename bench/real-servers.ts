/**
 * npm run bench -- real-servers (needs MONGO_URL and KAFKA_BROKERS: scripts/test-servers.sh start):
 * the service on EventStoreDB's stand-in (the SQLite event store), a MongoDB-protocol read store
 * (FerretDB here) and Kafka. It imports BENCH_REAL_GUESTS guests (default 2,000) through PUT
 * upsert with an invitation template, scans BENCH_REAL_SCANS of them (default 200) from 10
 * connections (answers slower than autocannon's 10 s are counted as timeouts, not hidden), and samples /metrics every second: projection lag, relay lag and consumer lag over
 * time, until everything has caught up. A CPU profile of the service process says where its time
 * went; the time the process waited (idle) is time spent in the servers.
 */
import { Session } from 'node:inspector/promises';
import { createClient, startTestService } from '../test/support/service.js';
import { heaviest, summarise } from './profile/areas.js';
import { fmt, load, record, table } from './support.js';

// The figures are 20,000 guests and 2,000 scans; on FerretDB (about 200 document writes/s,
// and every filter but a bare _id a collection scan) that run takes hours, so the default is a
// tenth of it: set BENCH_REAL_GUESTS / BENCH_REAL_SCANS for the full size against a real MongoDB.
const GUESTS = Number(process.env.BENCH_REAL_GUESTS ?? 2_000);
const SCANS = Number(process.env.BENCH_REAL_SCANS ?? 200);

interface Sample {
  second: number;
  projections: number;
  relay: number;
  consumers: number;
}

/** Sums of the lag gauges in a Prometheus text answer. */
function lagOf(text: string): Omit<Sample, 'second'> {
  const sum = (metric: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`${metric}{`) || line.startsWith(`${metric} `))
      .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return { projections: sum('projection_lag_events'), relay: sum('relay_lag_events'), consumers: sum('bus_consumer_lag_messages') };
}

export async function realServersBench(): Promise<void> {
  if (!process.env.MONGO_URL || !process.env.KAFKA_BROKERS) {
    throw new Error('the real-servers bench needs MONGO_URL and KAFKA_BROKERS: run scripts/test-servers.sh start and source its env file');
  }
  const service = await startTestService({
    LOG_LEVEL: 'silent',
    SQLITE_SYNCHRONOUS: 'FULL',
    MONGO_URL: process.env.MONGO_URL,
    MONGO_DB: `bench_${Date.now()}`,
    KAFKA_BROKERS: process.env.KAFKA_BROKERS,
    INVITES_SENDING_ADDRESS: 'invites@checkin.test',
  });
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
  const eventId = event.body.id as string;
  const template = await client.call('POST', '/comms/v1/api/comms/template', {
    eventId,
    name: 'Invitation',
    subject: 'Your ticket, {{firstName}}',
    html: '<p>Dear {{firstName}}, your code is {{barcode}}.</p>',
  });
  if (template.status !== 200) throw new Error(`template: ${template.status} ${JSON.stringify(template.body)}`);
  const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };

  const samples: Sample[] = [];
  const started = Date.now();
  const sampler = setInterval(() => {
    void fetch(`${service.url}/metrics`)
      .then((reply) => reply.text())
      .then((text) => samples.push({ second: Math.round((Date.now() - started) / 1000), ...lagOf(text) }))
      .catch(() => undefined);
  }, 1000);

  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 1000 });
  await session.post('Profiler.start');

  const importStart = Date.now();
  for (let start = 0; start < GUESTS; start += 200) {
    const batch = Array.from({ length: Math.min(200, GUESTS - start) }, (_, k) => {
      const i = start + k;
      return { firstName: `First${i}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `BC-${i}`, commsTemplateId: template.body.id };
    });
    const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, { method: 'PUT', headers, body: JSON.stringify(batch) });
    if (reply.status !== 204) throw new Error(`upsert failed: ${reply.status} ${await reply.text()}`);
    if (start % 2_000 === 0) process.stdout.write(`  imported ${fmt(start)} guests\r`);
  }
  const importSeconds = (Date.now() - importStart) / 1000;
  console.log(`  imported ${fmt(GUESTS)} guests in ${fmt(importSeconds, 1)} s`);

  const bodies = Array.from({ length: SCANS }, (_, i) => JSON.stringify({ barcode: `BC-${i}`, gate: `G${i % 4}` }));
  const scans = await load({ url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`, method: 'POST', headers, connections: 10, amount: SCANS, bodies });
  if (scans.non2xx > 0) throw new Error(`scans answered non-2xx: ${JSON.stringify(scans)}`);
  const writesDone = Date.now();

  // Caught up: no lag anywhere, and every invitation has an outcome.
  const deadline = Date.now() + 30 * 60_000;
  let caughtUpAt: number | undefined;
  while (Date.now() < deadline) {
    const last = samples.at(-1);
    if (last && last.second * 1000 >= writesDone - started && last.projections + last.relay + last.consumers === 0) {
      caughtUpAt = Date.now();
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  clearInterval(sampler);
  const { profile } = await session.post('Profiler.stop');
  if (caughtUpAt === undefined) throw new Error('the pipeline did not catch up within 30 minutes');

  const max = (key: keyof Omit<Sample, 'second'>) => samples.reduce((m, s) => Math.max(m, s[key]), 0);
  const every = Math.max(1, Math.ceil(samples.length / 12));
  const overTime = samples.filter((_, i) => i % every === 0 || i === samples.length - 1);
  const output = table(
    ['measure', 'figure'],
    [
      [`import ${fmt(GUESTS)} guests with an invitation each (upsert, batches of 200)`, `${fmt(importSeconds, 1)} s (${fmt(GUESTS / importSeconds)} guests/s)`],
      [`${fmt(SCANS)} scans, 10 connections`, `${fmt(scans.accepted.count + scans.first.count)} answered: ${fmt((scans.accepted.count + scans.first.count) / scans.durationSec, 1)} scans/s, p50 ${fmt(scans.accepted.p50)} ms, p99 ${fmt(scans.accepted.p99)} ms; ${fmt(scans.timeouts)} timed out (> 10 s)`],
      ['last write to everything caught up (read models, relay, consumers)', `${fmt((caughtUpAt - writesDone) / 1000, 1)} s`],
      ['largest lag seen: projections / relay / consumers', `${fmt(max('projections'))} events / ${fmt(max('relay'))} events / ${fmt(max('consumers'))} messages`],
    ],
  );
  const lagTable = table(
    ['second', 'projection lag (events)', 'relay lag (events)', 'consumer lag (messages)'],
    overTime.map((s) => [s.second, fmt(s.projections), fmt(s.relay), fmt(s.consumers)]),
  );
  const split = summarise(profile);
  console.log(`${output}\n\n${lagTable}\n\n${split}\n\n${heaviest(profile, 15)}`);
  record(
    'Real servers',
    [
      output,
      'Lag over the run (sampled from /metrics every second; a dozen rows shown):',
      lagTable,
      'Where the service process spent its time (CPU profile; idle is waiting for the servers):',
      '```\n' + split + '\n```',
      `Servers: FerretDB (MONGO_URL=${process.env.MONGO_URL}) and Kafka (KAFKA_BROKERS=${process.env.KAFKA_BROKERS}) from scripts/test-servers.sh, the SQLite event store (synchronous=FULL), every role in one process.`,
    ].join('\n\n'),
  );
  await service.close();
}
