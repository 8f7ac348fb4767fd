/**
 * npx tsx bench/profile/door-during-sends.ts: what the send and webhook workers cost the door on
 * the embedded default, where they share the door's thread (issue 13 goal 6). One service
 * (SQLITE_SYNCHRONOUS=FULL, real @sendgrid/mail client; the SendGrid double and the webhook
 * receiver in a process of their own, remote-doubles.ts), 72,000 guests at the door (24,000 a phase: a fast machine scans 20,000 in 6 s), three phases
 * of check-in scans (50 connections, 6 s each, each on guests of its own):
 *   1. scans alone;
 *   2. scans while 4,000 guests are imported into another event without invitations;
 *   3. scans while 4,000 guests are imported with an invitation each (emails sent, comms.sent
 *      webhooks delivered).
 * Then, without scans, a burst of 2,000 invitations: the service process's CPU per email.
 * BENCH_DOOR_CORE=0 gives the service's main thread core 0 to itself and puts everything else
 * (the workers' thread with WORKERS_THREAD=on, the load generator, the doubles) on the others.
 */
import { performance } from 'node:perf_hooks';
import { doorSendingInvitations, invitationHtml } from './door.js';
import { load, pinDoorThread, until, type LoadResult } from '../support.js';

const GUESTS = 72_000;
const PHASE = GUESTS / 3;
const IMPORTED = 4_000;
const SECONDS = 6;

const { service, client, eventId: door, headers, bodies, stop } = await doorSendingInvitations(GUESTS);
try {
  const newEvent = async (title: string) => (await client.call('POST', '/checkin/v1/api/event', { title, startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' })).body.id as string;
  const templateFor = async (eventId: string) => (await client.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', subject: 'Welcome {{firstName}}', html: invitationHtml })).body.id as string;
  const upsert = async (eventId: string, count: number, guest: (i: number) => Record<string, unknown>) => {
    for (let start = 0; start < count; start += 200) {
      const reply = await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, Array.from({ length: Math.min(200, count - start) }, (_, k) => guest(start + k)));
      if (reply.status !== 204) throw new Error(`upsert: ${reply.status} ${JSON.stringify(reply.body)}`);
    }
  };
  // The main thread's event-loop utilisation (1: never idle) over each phase, beside the scans.
  let loopUse = 0;
  const scans = async (phase: number): Promise<LoadResult> => {
    pinDoorThread();
    const before = performance.eventLoopUtilization();
    const result = await load({ url: `${service.url}/checkin/v1/api/guests/${door}/checkin`, method: 'POST', headers, connections: 50, durationSec: SECONDS, bodies: bodies.slice(phase * PHASE, (phase + 1) * PHASE) });
    loopUse = performance.eventLoopUtilization(before).utilization;
    if (result.non2xx > 0 || result.errors > 0 || result.total > PHASE) throw new Error(`phase ${phase + 1}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.total} scans of ${PHASE} guests`);
    return result;
  };
  const sent = () => service.platform.readStore.collection('invitations').count({ status: 'sent' });
  const line = (name: string, r: LoadResult, extra = '') => console.log(`${name.padEnd(52)} ${Math.round(r.requestsPerSec)} scans/s, p50 ${r.p50} ms, p99 ${r.p99} ms, main thread busy ${Math.round(loopUse * 100)}%${extra}`);

  line('1. scans alone', await scans(0));
  const plain = await newEvent('Plain import');
  const plainImport = upsert(plain, IMPORTED, (i) => ({ firstName: `P${i}`, lastName: 'I', email: `p${i}@example.com`, barcode: `P-${i}` }));
  line(`2. while ${IMPORTED} guests are imported`, await scans(1));
  await plainImport;
  const gala = await newEvent('Gala');
  const template = await templateFor(gala);
  const invited = upsert(gala, IMPORTED, (i) => ({ firstName: `G${i}`, lastName: 'I', email: `g${i}@example.com`, barcode: `G-${i}`, commsTemplateId: template }));
  const during = await scans(2);
  const sentInWindow = await sent();
  await invited;
  const started = Date.now();
  const allSent = await until(async () => (await sent()) >= IMPORTED, 'the invitations of phase 3');
  line(`3. while ${IMPORTED} guests are imported and invited`, during, `; ${sentInWindow} emails sent in the window, the rest ${((allSent - started) / 1000).toFixed(1)} s after it`);

  // The burst starts once phase 3's comms.sent webhooks are delivered too, so it measures itself alone.
  const delivered = () => service.platform.readStore.collection('webhook_deliveries').count({ status: 'delivered' });
  const pendingWebhooksAt = await delivered();
  await until(async () => (await delivered()) >= IMPORTED, "phase 3's webhook deliveries");
  console.log(`   (phase 3's webhooks: ${pendingWebhooksAt} of ${IMPORTED} delivered when its last email was sent)`);
  const burstEvent = await newEvent('Burst');
  const burstTemplate = await templateFor(burstEvent);
  pinDoorThread();
  const cpu = process.cpuUsage();
  const t0 = Date.now();
  await upsert(burstEvent, 2_000, (i) => ({ firstName: `B${i}`, lastName: 'I', email: `b${i}@example.com`, barcode: `B-${i}`, commsTemplateId: burstTemplate }));
  const burstSent = await until(async () => (await sent()) >= IMPORTED + 2_000, 'the burst of invitations');
  const used = process.cpuUsage(cpu);
  console.log(`4. 2,000 invitations, no scans: sent in ${((burstSent - t0) / 1000).toFixed(1)} s, service process CPU ${Math.round((used.user + used.system) / 2_000)} µs per email (the import included)`);
} finally {
  await stop();
}
process.exit(0);
