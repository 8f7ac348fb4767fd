/**
 * npx tsx bench/profile/sends-profile.ts: a CPU profile of the service's main thread while 2,000
 * guests are imported with an invitation each and every email is sent (the real @sendgrid/mail
 * client against the SendGrid double, every comms.sent delivered to a webhook receiver; both in a
 * process of their own, remote-doubles.ts). Written to sends.cpuprofile (PROFILE_OUT to name
 * another file), with the self time per area, the heaviest functions, and per email the main
 * thread's busy time (event-loop utilisation) and the process's CPU. PROFILE=off measures without
 * the profiler. Issue 13 goal 6: what an invitation costs the door's thread.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { doorSendingInvitations, invitationHtml } from './door.js';
import { mainThreadCpuMicros, until } from '../support.js';
import { heaviest, summarise } from './areas.js';

const INVITED = Number(process.env.BENCH_GUESTS ?? 2_000);
// BENCH_DOOR_GUESTS: guests of another event already in the service (a big service's burst).
const { service, client, stop } = await doorSendingInvitations(Number(process.env.BENCH_DOOR_GUESTS ?? 0));
try {
  const eventId = (await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' })).body.id as string;
  const template = (await client.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', subject: 'Welcome {{firstName}}', html: invitationHtml })).body.id as string;
  const sent = () => service.platform.readStore.collection('invitations').count({ status: 'sent' });
  // BENCH_EARLIER_BURSTS=N: N bursts of the same size to events of their own before the measured one.
  const earlier = Number(process.env.BENCH_EARLIER_BURSTS ?? 0);
  for (let burst = 1; burst <= earlier; burst++) {
    const other = (await client.call('POST', '/checkin/v1/api/event', { title: `Earlier ${burst}`, startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' })).body.id as string;
    const otherTemplate = (await client.call('POST', '/comms/v1/api/comms/template', { eventId: other, name: 'Invitation', subject: 'Welcome {{firstName}}', html: invitationHtml })).body.id as string;
    for (let start = 0; start < INVITED; start += 200) {
      const batch = Array.from({ length: Math.min(200, INVITED - start) }, (_, k) => ({ firstName: `E${start + k}`, lastName: 'I', email: `e${burst}-${start + k}@example.com`, commsTemplateId: otherTemplate }));
      const reply = await client.call('PUT', `/checkin/v1/api/guests/${other}/upsert`, batch);
      if (reply.status !== 204) throw new Error(`upsert: ${reply.status} ${JSON.stringify(reply.body)}`);
    }
    await until(async () => (await sent()) >= burst * INVITED, `earlier burst ${burst}`);
  }
  const sentBefore = earlier * INVITED;
  const profiling = process.env.PROFILE !== 'off';
  const session = new Session();
  if (profiling) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
  }
  const loop = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const mainCpu = mainThreadCpuMicros();
  const started = Date.now();
  for (let start = 0; start < INVITED; start += 200) {
    const batch = Array.from({ length: Math.min(200, INVITED - start) }, (_, k) => ({ firstName: `G${start + k}`, lastName: 'I', email: `g${start + k}@example.com`, barcode: `G-${start + k}`, commsTemplateId: template }));
    const reply = await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, batch);
    if (reply.status !== 204) throw new Error(`upsert: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  const allSent = await until(async () => (await sent()) >= sentBefore + INVITED, 'the invitations');
  // The work of an invitation ends with its comms.sent webhook delivered: measured up to there,
  // so a build whose webhooks trail its emails does not look cheaper for leaving them out.
  const delivered = () => service.platform.readStore.collection('webhook_deliveries').count({ status: 'delivered' });
  const allDelivered = await until(async () => (await delivered()) >= sentBefore + INVITED, 'the comms.sent webhooks');
  const used = process.cpuUsage(cpu);
  const mainBusyMs = performance.eventLoopUtilization(loop).active;
  const mainCpuUs = mainThreadCpuMicros() - mainCpu;
  console.log(
    `${INVITED} invitations sent in ${((allSent - started) / 1000).toFixed(1)} s, their webhooks delivered in ${((allDelivered - started) / 1000).toFixed(1)} s; per email (the import included): main thread busy ${Math.round((mainBusyMs * 1000) / INVITED)} µs (its CPU ${Math.round(mainCpuUs / INVITED)} µs), ` +
      `service process (all threads) ${Math.round((used.user + used.system) / INVITED)} µs of CPU${profiling ? ' (profiler on)' : ''}`,
  );
  if (process.env.COUNT_EVENTS) {
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(`${service.dataDir}/events.sqlite`, { readonly: true });
    console.log(db.prepare('SELECT type, count(*) AS n FROM events GROUP BY type ORDER BY n DESC').all());
    const bus = new Database(`${service.dataDir}/bus.sqlite`, { readonly: true });
    console.log(bus.prepare('SELECT topic, count(*) AS n FROM bus_messages GROUP BY topic').all());
  }
  if (profiling) {
    const { profile } = await session.post('Profiler.stop');
    fs.writeFileSync(process.env.PROFILE_OUT ?? 'sends.cpuprofile', JSON.stringify(profile));
    console.log(summarise(profile));
    console.log('\nheaviest functions (self time):');
    console.log(heaviest(profile, 30));
  }
} finally {
  await stop();
}
process.exit(0);
