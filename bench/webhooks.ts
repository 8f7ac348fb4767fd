/**
 * npm run bench -- webhooks (or npx tsx bench/webhooks.ts): the webhook dispatcher on the embedded
 * default (SQLite event store with synchronous=FULL, embedded read store and bus), 50 accounts each
 * with a local receiver.
 *
 * - throughput: 2,000 webhook/test calls fired by 50 callers at once; deliveries/s until the last arrives.
 * - latency: calls paced at 100/s over all accounts; per delivery, from the webhook/test call (the
 *   source comms event being appended) to the receiver's POST. Target p50 < 100 ms, p99 < 500 ms.
 * - isolation: the same, with one account's receiver hanging (never answering); the other 49
 *   accounts must stay within the same targets.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createClient, startTestService, type Client, type TestService } from '../test/support/service.js';
import { fmt, percentile, record, table } from './support.js';

const ACCOUNTS = 50;
const api = '/comms/v1/api/comms';

interface Receiver {
  url: string;
  /** correlationId -> arrival (epoch ms), and the body's createdAt. */
  arrivals: Map<string, { at: number; createdAt: number }>;
  hang: boolean;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = { url: '', arrivals: new Map(), hang: false, close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { createdAt: string; data: { correlationId?: string } };
      const key = body.data.correlationId ?? '';
      if (!receiver.arrivals.has(key)) receiver.arrivals.set(key, { at, createdAt: Date.parse(body.createdAt) });
      if (receiver.hang) hanging.add(res);
      else res.end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return receiver;
}

interface Sent {
  account: number;
  correlationId: string;
  calledAt: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForArrivals(receivers: Receiver[], sent: Sent[], skip: Set<number>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = () => sent.filter((s) => !skip.has(s.account) && !receivers[s.account]!.arrivals.has(s.correlationId)).length;
  while (pending() > 0) {
    if (Date.now() > deadline) throw new Error(`${pending()} deliveries did not arrive within ${timeoutMs} ms`);
    await sleep(20);
  }
}

interface Latencies {
  fromCall: number[];
  fromAppend: number[];
  lastArrival: number;
}

function latencies(receivers: Receiver[], sent: Sent[], skip: Set<number>): Latencies {
  const fromCall: number[] = [];
  const fromAppend: number[] = [];
  let lastArrival = 0;
  for (const s of sent) {
    if (skip.has(s.account)) continue;
    const arrival = receivers[s.account]!.arrivals.get(s.correlationId)!;
    fromCall.push(arrival.at - s.calledAt);
    fromAppend.push(arrival.at - arrival.createdAt);
    lastArrival = Math.max(lastArrival, arrival.at);
  }
  return { fromCall, fromAppend, lastArrival };
}

let sequence = 0;
async function fire(clients: Client[], account: number, sent: Sent[]): Promise<void> {
  const correlationId = `b${++sequence}`;
  const entry = { account, correlationId, calledAt: Date.now() };
  sent.push(entry);
  const reply = await clients[account]!.call('POST', `${api}/webhook/test`, { correlationId });
  if (reply.status !== 200) throw new Error(`webhook/test answered ${reply.status}: ${JSON.stringify(reply.body)}`);
}

/** Closed loop: every account's caller sends `perAccount` tests back to back, all accounts at once. */
async function burst(clients: Client[], perAccount: number): Promise<Sent[]> {
  const sent: Sent[] = [];
  await Promise.all(
    clients.map(async (_c, account) => {
      for (let i = 0; i < perAccount; i++) await fire(clients, account, sent);
    }),
  );
  return sent;
}

/** Open loop: `total` tests at `perSecond`, accounts in turn, not waiting for answers. */
async function paced(clients: Client[], total: number, perSecond: number): Promise<Sent[]> {
  const sent: Sent[] = [];
  const calls: Promise<void>[] = [];
  const start = Date.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / perSecond;
    if (due > Date.now()) await sleep(due - Date.now());
    calls.push(fire(clients, i % clients.length, sent));
  }
  await Promise.all(calls);
  return sent;
}

const ms = (values: number[], p: number) => `${fmt(percentile(values, p))} ms`;

async function run(): Promise<void> {
  const service: TestService = await startTestService({
    WEBHOOK_ALLOW_INSECURE: 'true',
    SQLITE_SYNCHRONOUS: 'FULL',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
  });
  const receivers: Receiver[] = [];
  try {
    const clients = await Promise.all(
      Array.from({ length: ACCOUNTS }, () => createClient(service, { commsApiEnabled: true, senderTrusted: true })),
    );
    for (const client of clients) {
      const receiver = await startReceiver();
      receivers.push(receiver);
      const configured = await client.call('POST', `${api}/webhook`, { url: receiver.url });
      if (configured.status !== 200) throw new Error(`webhook create answered ${configured.status}`);
    }
    const none = new Set<number>();

    // Warm-up: connections, JIT, SQLite pages.
    await waitForArrivals(receivers, await paced(clients, 200, 200), none, 30_000);

    const burstStart = Date.now();
    const burstSent = await burst(clients, 40);
    await waitForArrivals(receivers, burstSent, none, 120_000);
    const burstRun = latencies(receivers, burstSent, none);
    const perSecond = (burstSent.length * 1000) / (burstRun.lastArrival - burstStart);

    const steadySent = await paced(clients, 1000, 100);
    await waitForArrivals(receivers, steadySent, none, 30_000);
    const steady = latencies(receivers, steadySent, none);

    // Account 0's receiver now takes every POST and never answers (until the 10 s attempt timeout).
    receivers[0]!.hang = true;
    const hangingAccount = new Set([0]);
    const isolatedSent = await paced(clients, 1000, 100);
    await waitForArrivals(receivers, isolatedSent, hangingAccount, 30_000);
    const isolated = latencies(receivers, isolatedSent, hangingAccount);
    const hungPosts = isolatedSent.filter((s) => s.account === 0 && receivers[0]!.arrivals.has(s.correlationId)).length;

    const verdict = (l: number[]) =>
      percentile(l, 50) < 100 && percentile(l, 99) < 500 ? 'meets p50 < 100 ms, p99 < 500 ms' : 'MISSES p50 < 100 ms, p99 < 500 ms';
    const output = table(
      ['measure (50 accounts, local receivers)', 'figure', 'target'],
      [
        [`throughput: ${fmt(burstSent.length)} webhook/test calls, 50 callers back to back`, `${fmt(perSecond)} deliveries/s`, ''],
        ['  latency under that burst, call → receiver POST', `p50 ${ms(burstRun.fromCall, 50)}, p99 ${ms(burstRun.fromCall, 99)}`, '(saturated: queueing)'],
        [`steady: ${fmt(steadySent.length)} calls at 100/s, call → receiver POST`, `p50 ${ms(steady.fromCall, 50)}, p99 ${ms(steady.fromCall, 99)}`, 'p50 < 100 ms, p99 < 500 ms'],
        ['  same, event append (body createdAt) → receiver POST', `p50 ${ms(steady.fromAppend, 50)}, p99 ${ms(steady.fromAppend, 99)}`, ''],
        [
          `one receiver hanging: the other 49 accounts (${fmt(isolated.fromCall.length)} deliveries), call → POST`,
          `p50 ${ms(isolated.fromCall, 50)}, p99 ${ms(isolated.fromCall, 99)}`,
          'p50 < 100 ms, p99 < 500 ms',
        ],
        ['  the hanging account: POSTs it received during the run (4 in flight at most, 10 s timeout)', fmt(hungPosts), ''],
      ],
    );
    const summary = [
      `Steady: ${verdict(steady.fromCall)}. With one receiver hanging, the others: ${verdict(isolated.fromCall)}.`,
      'Embedded default: SQLite event store with synchronous=FULL (every append fsynced), embedded read store and bus, all in one process with the receivers and the load.',
      'Each delivery is three appends (test request, delivery scheduled, attempt recorded) plus the relay, the projections and the bus.',
    ].join('\n');
    console.log(`${output}\n\n${summary}`);
    record('Webhooks', `${output}\n\n${summary}`);
  } finally {
    await Promise.all(receivers.map((r) => r.close()));
    await service.close();
  }
}

let running: Promise<void> | undefined;
/** Runs once per process, whether imported (bench/index.ts) or called. */
export const webhooksBench = (): Promise<void> => (running ??= run());

await webhooksBench();
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exit(0);
