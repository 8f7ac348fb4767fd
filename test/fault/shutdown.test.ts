/**
 * Graceful shutdown (issue 12, item 3; docs/operations.md, Shutdown): the service as a child
 * process, stopped by SIGTERM to its process group under load and after varied flows.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnService, type ChildService } from '../support/child-service.js';
import { addGuests, commsApi, commsSetup, sendTo } from '../support/flows.js';
import { keepAliveLoad } from '../support/keepalive-load.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

const env = { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '200,200', SHUTDOWN_DRAIN_TIMEOUT_MS: '2000' };
const dataDirs: string[] = [];
const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** Hang guard only: the spec's bound is 15 s; a clean stop here takes about a second. */
const exitBoundMs = 15_000;

async function stopAndCheck(service: ChildService): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  service.killGroup('SIGTERM');
  const exit = await Promise.race([
    service.exited,
    new Promise<undefined>((resolve) => setTimeout(resolve, exitBoundMs + 5_000)),
  ]);
  if (!exit) {
    service.killGroup('SIGKILL');
    throw new Error(`pid ${service.pid} still alive ${exitBoundMs + 5_000} ms after SIGTERM; last log lines: ${JSON.stringify(service.logs.slice(-5))}`);
  }
  return { code: exit.code, ms: Date.now() - started };
}

/**
 * Waits for a positive marker (docs/testing.md, chance failures): polls `condition` until it holds.
 * Hang guard only, far above any real figure: a marker that never comes fails the test here.
 */
async function waitUntil(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const expectCleanStop = (service: ChildService, stop: { code: number | null; ms: number }) => {
  expect(stop.code, service.stderr.slice(-1000)).toBe(0);
  expect(service.logs.some((l) => l.msg === 'stopped')).toBe(true);
  expect(service.logs.filter((l) => l.msg === 'shutdown did not finish in time; exiting anyway')).toEqual([]);
};

async function spawn(): Promise<ChildService> {
  const service = await spawnService(env);
  dataDirs.push(service.dataDir);
  return service;
}

type Flow = (service: ChildService) => Promise<() => void | Promise<void>>;

/** Each flow leaves the service busy in its own way; what it returns runs after the stop. */
const flows: Record<string, Flow> = {
  'idle after start': async () => () => {},
  'kept-alive clients looping on GET': async (service) => {
    const load = keepAliveLoad(service.url!, 10);
    // The load is under way once each client has had an answer (its kept-alive socket is in use).
    await waitUntil(() => load.tally.clientsAnswered === 10, 'an answer to each of the 10 kept-alive clients');
    return async () => {
      await load.stop();
      expect(load.tally.resets, load.tally.errors.join(', ')).toBe(0);
    };
  },
  'sends in flight': async (service) => {
    const setup = await commsSetup(service as { url: string });
    await sendTo(setup, await addGuests(setup, 60));
    return () => {};
  },
  'a webhook attempt hanging at the receiver': async (service) => {
    const receiver = await startReceiver({ fallback: 'hang' });
    receivers.push(receiver);
    const setup = await commsSetup(service as { url: string });
    const configured = await setup.client.call('POST', `${commsApi}/webhook`, { url: receiver.url });
    receiver.secret = configured.body.secret;
    await setup.client.call('POST', `${commsApi}/webhook/test`);
    await receiver.waitFor(1);
    return () => {};
  },
  'a request whose body never finishes': async (service) => {
    const { port } = new URL(service.url!);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('POST /checkin/v1/api/event HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"title":');
    socket.on('error', () => {});
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    // The service has read the request's head once it answers it (401: no credentials), the body still open.
    await waitUntil(() => /^HTTP\/1.1 \d{3} /.test(answer), 'the answer to the head of the unfinished request');
    return () => void socket.destroy();
  },
  'a client that half-closed after its request': async (service) => {
    const { port } = new URL(service.url!);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', () => {});
    socket.end('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitUntil(() => /^HTTP\/1.1 \d{3} /.test(answer), 'the answer to the half-closed client');
    return () => {
      socket.destroy();
      expect(answer).toMatch(/^HTTP\/1.1 (200|503)/);
    };
  },
  'a client that does not read a large answer': async (service) => {
    let answering = false;
    const request = http.get(`${service.url}/openapi.json`, { agent: new http.Agent({ keepAlive: true }) }, (res) => {
      res.pause();
      answering = true;
    });
    request.on('error', () => {});
    // The service is writing the answer once its head has arrived.
    await waitUntil(() => answering, 'the head of the /openapi.json answer');
    return () => void request.destroy();
  },
};

describe('graceful shutdown on SIGTERM', () => {
  it('answers every request of 10 kept-alive clients looping on GET: zero resets, exit 0', async () => {
    const service = await spawn();
    const load = keepAliveLoad(service.url!, 10);
    // The stop comes once the load is under way (the count asserted below), not after a fixed sleep.
    await waitUntil(() => load.tally.clientsAnswered === 10 && load.tally.ok > 10, 'an answer to each of the 10 kept-alive clients, more than 10 in all');
    const stop = await stopAndCheck(service);
    await load.done;
    expectCleanStop(service, stop);
    expect(load.tally.resets, load.tally.errors.join(', ')).toBe(0);
    expect(load.tally.other).toBe(0);
    expect(load.tally.ok).toBeGreaterThan(10);
    // Each client was told by the answer to its own request, then refused cleanly.
    expect(load.tally.closeAnswers).toBeGreaterThanOrEqual(1);
    expect(load.tally.refused).toBe(10);
  }, 60_000);

  const rounds = Number(process.env.SHUTDOWN_SOAK_ROUNDS ?? 1);
  it(`exits 0 within the bound after each of ${Object.keys(flows).length} flows, ${rounds} rounds`, async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const [name, flow] of Object.entries(flows)) {
        // A failure names its flow and round, and the outcomes before it.
        const named = (error: unknown) => new Error(`round ${round + 1}, flow "${name}" (after: ${outcomes.join('; ') || 'none'}): ${(error as Error).message}`, { cause: error });
        const service = await spawn().catch((error: unknown) => Promise.reject(named(error)));
        try {
          const after = await flow(service);
          const stop = await stopAndCheck(service);
          expectCleanStop(service, stop);
          await after();
          outcomes.push(`${name}: exit ${stop.code} in ${stop.ms} ms`);
        } catch (error) {
          throw named(error);
        }
      }
    }
    expect(outcomes).toHaveLength(rounds * Object.keys(flows).length);
    if (process.env.SHUTDOWN_SOAK_REPORT) console.log(outcomes.join('\n'));
  }, 600_000);
});
