/**
 * npm run bench -- real-servers (needs MONGO_URL and KAFKA_BROKERS: scripts/test-servers.sh start):
 * the service on EventStoreDB's stand-in (the SQLite event store), a MongoDB-protocol read store
 * (FerretDB here) and Kafka. It imports BENCH_REAL_GUESTS guests (default 20,000) through PUT
 * upsert with an invitation template, scans BENCH_REAL_SCANS of them (default 2,000) by guest id
 * from 10 connections (answers slower than autocannon's 10 s are counted as timeouts, not hidden),
 * and samples /metrics every second: projection lag, relay lag and consumer lag over time, until
 * everything has caught up. Then it times BARCODE_PROBES scans by barcode, one at a time. A CPU
 * profile of the service process says where its time went; the time the process waited (idle) is
 * time spent in the servers.
 */
import { Session } from 'node:inspector/promises';
import { createClient, startTestService } from '../test/support/service.js';
import { heaviest, summarise } from './profile/areas.js';
import { fmt, load, record, table } from './support.js';

// The figures. The scans name their guest by id: FerretDB 1.24 answers a lookup by _id from
// its index (scripts/ferretdb.sh) and every other filter by reading the whole collection, so a
// door's lookup by barcode costs a read of every guest of the run there (timed apart, below),
// where MongoDB uses the {barcode, eventId} index.
const GUESTS = Number(process.env.BENCH_REAL_GUESTS ?? 20_000);
const SCANS = Number(process.env.BENCH_REAL_SCANS ?? 2_000);
const BARCODE_PROBES = 10;

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

  // The first SCANS guests in the list's order (those the read model holds already; the list
  // waits for it as any read after a write does).
  const ids: string[] = [];
  for (let cursor: string | null = null; ids.length < SCANS; ) {
    const query: URLSearchParams = new URLSearchParams({ limit: String(Math.min(1_000, SCANS - ids.length)), ...(cursor ? { cursor } : {}) });
    const reply: Response = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}?${query}`, { headers });
    if (reply.status !== 200) throw new Error(`list failed: ${reply.status} ${await reply.text()}`);
    const page = (await reply.json()) as { items: { id: string }[]; nextCursor?: string };
    ids.push(...page.items.map((guest) => guest.id));
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  if (ids.length < SCANS) throw new Error(`the list gave ${ids.length} guests, ${SCANS} wanted`);
  const bodies = ids.map((guestId, i) => JSON.stringify({ guestId, gate: `G${i % 4}` }));
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

  // Scans by barcode, one at a time, with nothing else running: guests not scanned above.
  const byBarcode: number[] = [];
  for (let i = 0; i < BARCODE_PROBES; i++) {
    const t0 = performance.now();
    const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/checkin`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ barcode: `BC-${GUESTS - 1 - i}`, gate: 'G0' }),
    });
    if (reply.status !== 200 || ((await reply.json()) as { result?: string }).result !== 'admitted') {
      throw new Error(`scan by barcode BC-${GUESTS - 1 - i}: ${reply.status}`);
    }
    byBarcode.push(performance.now() - t0);
  }
  byBarcode.sort((a, b) => a - b);

  const max = (key: keyof Omit<Sample, 'second'>) => samples.reduce((m, s) => Math.max(m, s[key]), 0);
  const every = Math.max(1, Math.ceil(samples.length / 12));
  const overTime = samples.filter((_, i) => i % every === 0 || i === samples.length - 1);
  const output = table(
    ['measure', 'figure'],
    [
      [`import ${fmt(GUESTS)} guests with an invitation each (upsert, batches of 200)`, `${fmt(importSeconds, 1)} s (${fmt(GUESTS / importSeconds)} guests/s)`],
      [`${fmt(SCANS)} scans by guest id, 10 connections, right after the import`, `${fmt(scans.accepted.count + scans.first.count)} answered: ${fmt((scans.accepted.count + scans.first.count) / scans.durationSec, 1)} scans/s, p50 ${fmt(scans.accepted.p50)} ms, p99 ${fmt(scans.accepted.p99)} ms; ${fmt(scans.timeouts)} timed out (> 10 s)`],
      ['last write to everything caught up (read models, relay, consumers)', `${fmt((caughtUpAt - writesDone) / 1000, 1)} s`],
      [
        `${BARCODE_PROBES} scans by barcode, one at a time, after everything caught up`,
        `median ${fmt(byBarcode[Math.floor(byBarcode.length / 2)]!)} ms, slowest ${fmt(byBarcode.at(-1)!)} ms`,
      ],
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
