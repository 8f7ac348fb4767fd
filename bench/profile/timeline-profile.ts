/**
 * npx tsx bench/profile/timeline-profile.ts [variant] [seconds]: a CPU profile of the service
 * process while autocannon (4 connections) asks for the arrivals timeline of an event with
 * BENCH_SCANS scans (default 100,000), written to timeline.cpuprofile, with the self time per
 * area and the heaviest functions. Variants: total (bucket=5), gate (bucket=5&by=gate),
 * device (bucket=1&by=device; default). The seeding happens before the profiler starts.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createClient, startTestService } from '../../test/support/service.js';
import { seedScans } from '../analytics.js';
import { load } from '../support.js';
import { heaviest, summarise } from './areas.js';

const SCANS = Number(process.env.BENCH_SCANS ?? 100_000);
const variants: Record<string, string> = { total: 'bucket=5', gate: 'bucket=5&by=gate', device: 'bucket=1&by=device' };
const variant = process.argv[2] ?? 'device';
const seconds = Number(process.argv[3] ?? 8);
if (!variants[variant]) throw new Error(`unknown variant ${variant}: use ${Object.keys(variants).join(', ')}`);

const service = await startTestService({ LOG_LEVEL: 'silent' });
const client = await createClient(service);
const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Festival', startTime: '2026-06-01T15:00:00Z', endTime: '2026-06-01T23:00:00Z', timeZoneId: 'Europe/Berlin' });
const eventId = event.body.id as string;
await seedScans(service, client.id, eventId, SCANS);
const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey };
const url = `${service.url}/checkin/v1/api/event/${eventId}/timeline?${variants[variant]}`;
const sample = await fetch(url, { headers });
console.log(`answer: ${(await sample.arrayBuffer()).byteLength} bytes`);

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 200 });
await session.post('Profiler.start');
const result = await load({ url, headers, connections: 4, durationSec: seconds });
const { profile } = await session.post('Profiler.stop');
fs.writeFileSync('timeline.cpuprofile', JSON.stringify(profile));
console.log(`timeline ${variant}: ${Math.round(result.requestsPerSec)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}`);
console.log(summarise(profile));
console.log('\nheaviest functions (self time):');
console.log(heaviest(profile, 25));
await service.close();
process.exit(0);
