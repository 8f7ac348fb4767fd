/**
 * npx tsx bench/soak.ts [minutes=3] (not in `npm run bench`, not in the test run): the service
 * as a child process (embedded stores) under a mixed, paced load for a few minutes — guest
 * creates with a template (sends to the outbox and a webhook to a local receiver), upserts,
 * scans, lists, byinfo lookups, exports (and their downloads), webhook re-configuration, explicit
 * sends, requests with idempotency keys and to unknown paths — while it samples the child's RSS,
 * V8 heap used (`/metrics`, loopback), open file descriptors (`/proc/<pid>/fd`) and the sizes in
 * DATA_DIR. Prints one row per sample; growth that does not level off is what to look at
 * (docs/operations.md, "Memory").
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { spawnService } from '../test/support/child-service.js';
import { createClient, request, type Client } from '../test/support/service.js';

const minutes = Number(process.argv[2] ?? 3);
const sampleEveryMs = Number(process.env.SOAK_SAMPLE_MS ?? 15_000);
const comms = '/comms/v1/api/comms';

function sizeOf(dir: string): Record<string, number> {
  const sizes: Record<string, number> = {};
  const walk = (at: string, top: string): void => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      const key = top || entry.name;
      if (entry.isDirectory()) walk(full, key);
      else sizes[key] = (sizes[key] ?? 0) + (fs.statSync(full, { throwIfNoEntry: false })?.size ?? 0);
    }
  };
  walk(dir, '');
  return sizes;
}

function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : undefined;
}

async function main(): Promise<void> {
  let received = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const service = await spawnService({ WEBHOOK_ALLOW_INSECURE: 'true' });
  const url = service.url!;
  const clients: { client: Client; eventId: string; templateId: string; guests: string[] }[] = [];
  for (let i = 0; i < 4; i++) {
    const client = await createClient({ url }, { commsApiEnabled: true, senderTrusted: true });
    await client.call('POST', `${comms}/webhook`, { url: hook });
    const event = await client.call('POST', '/checkin/v1/api/event', { title: `Soak ${i}`, startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
    const template = await client.call('POST', `${comms}/template`, { eventId: event.body.id, name: 'Inv', subject: 'Hi {{firstName}}', html: '<p>Dear {{fullName}}</p>' });
    clients.push({ client, eventId: event.body.id, templateId: template.body.id, guests: [] });
  }

  const counts: Record<string, number> = {};
  const statuses: Record<string, number> = {};
  let n = 0;
  const step = async (): Promise<void> => {
    const c = clients[n % clients.length]!;
    const kind = n++ % 20;
    const note = (name: string, status: number) => {
      counts[name] = (counts[name] ?? 0) + 1;
      statuses[`${name} ${status}`] = (statuses[`${name} ${status}`] ?? 0) + 1;
    };
    if (kind < 6) {
      const r = await c.client.call(
        'POST',
        '/checkin/v1/api/guest',
        { eventId: c.eventId, firstName: `G${n}`, lastName: 'Soak', email: `g${n}@example.com`, ...(kind === 0 ? { commsTemplateId: c.templateId } : {}) },
        kind === 1 ? { 'idempotency-key': `soak-${n}` } : {},
      );
      if (r.status === 200) c.guests.push(r.body.id);
      note('create', r.status);
    } else if (kind < 9 && c.guests.length > 0) {
      const id = c.guests[n % c.guests.length]!;
      note('scan', (await c.client.call('POST', `/checkin/v1/api/guests/${c.eventId}/checkin`, { guestId: id })).status);
    } else if (kind === 9 && c.guests.length > 0) {
      const id = c.guests[n % c.guests.length]!;
      note('upsert', (await c.client.call('PUT', `/checkin/v1/api/guests/${c.eventId}/upsert`, [{ id, lastName: `S${n}` }, { firstName: `U${n}` }])).status);
    } else if (kind < 12) {
      note('list', (await c.client.call('GET', `/checkin/v1/api/guests/${c.eventId}?pageSize=50`)).status);
    } else if (kind === 12) {
      note('byinfo', (await c.client.call('GET', `/checkin/v1/api/guests/${c.eventId}/byinfo?additionalInfo=t${n % 50}`)).status);
    } else if (kind === 13 && (n - 1) % 60 === 13) {
      const r = await c.client.call('POST', '/checkin/v1/api/event/export', { id: c.eventId, title: 'x', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
      note('export', r.status);
      if (r.status === 200) note('download', (await c.client.call('GET', r.body.url)).status);
    } else if (kind === 14 && (n - 1) % 100 === 14) {
      note('webhook', (await c.client.call('POST', `${comms}/webhook`, { url: hook })).status);
    } else if (kind === 15 && c.guests.length > 0) {
      note('send', (await c.client.call('POST', `${comms}/send`, { templateId: c.templateId, attendeeIds: [c.guests[n % c.guests.length]!] })).status);
    } else if (kind === 16) {
      note('unknown', (await c.client.call('GET', `/checkin/v1/api/guest/nope-${n}`)).status);
    } else if (kind === 17) {
      note('stats', (await c.client.call('GET', `/checkin/v1/api/event/${c.eventId}/stats`)).status);
    } else if (kind === 18) {
      note('timeline', (await c.client.call('GET', `/checkin/v1/api/event/${c.eventId}/timeline`)).status);
    } else {
      note('guest', c.guests.length ? (await c.client.call('GET', `/checkin/v1/api/guest/${c.guests[n % c.guests.length]!}`)).status : 0);
    }
  };

  const rows: string[] = [];
  let logLines = 0;
  const byMessage = new Map<string, number>();
  const sample = async (elapsed: number): Promise<void> => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${service.pid}/status`, 'utf8'))![1]) / 1024;
    const fds = fs.readdirSync(`/proc/${service.pid}/fd`).length;
    const heap = (metric(text, 'nodejs_heap_size_used_bytes') ?? 0) / 1e6;
    const sizes = Object.entries(sizeOf(service.dataDir))
      .filter(([, s]) => s > 0)
      .map(([k, s]) => `${k}=${(s / 1e6).toFixed(2)}`)
      .join(' ');
    const row = `${(elapsed / 1000).toFixed(0).padStart(4)}s ops=${n} rss=${rss.toFixed(0)}MB heap=${heap.toFixed(1)}MB fds=${fds} hooks=${received} logLines=${logLines + service.logs.length} ${sizes}`;
    rows.push(row);
    logLines += service.logs.length;
    for (const line of service.logs) byMessage.set(String(line.msg), (byMessage.get(String(line.msg)) ?? 0) + 1);
    service.logs.length = 0; // the parent keeps no history
    console.log(row);
  };

  const started = Date.now();
  const end = started + minutes * 60_000;
  let nextSample = started;
  const workers = Array.from({ length: 4 }, async () => {
    while (Date.now() < end) {
      await step().catch((error: unknown) => console.error('step failed', error));
      // Paced: about 4 × 40 requests a second, well under one core.
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  });
  const sampler = (async () => {
    while (Date.now() < end) {
      if (Date.now() >= nextSample) {
        await sample(Date.now() - started);
        nextSample += sampleEveryMs;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  await Promise.all([...workers, sampler]);
  await sample(Date.now() - started);
  console.log(JSON.stringify({ counts, statuses }));
  // Log volume: lines per message over the run (what an operator's log store receives).
  console.log(JSON.stringify(Object.fromEntries([...byMessage].sort((a, b) => b[1] - a[1]).slice(0, 15))));
  console.log(service.stderr.slice(-3000));
  service.killGroup('SIGTERM');
  await service.exited;
  receiver.close();
  fs.rmSync(service.dataDir, { recursive: true, force: true });
  void request;
}

await main();
