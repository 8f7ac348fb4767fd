/**
 * npx tsx bench/profile/scan-compression-ab.ts: the door's scans with HTTP_COMPRESSION on and off,
 * two services in this one process, loaded in turn (4 rounds, order swapped each round), each
 * with and without `Accept-Encoding: gzip, deflate, br` (what phones' HTTP clients send). Prints
 * the process CPU per scan of each. On a shared, noisy machine runs of two checkouts minutes
 * apart differ by 20 %; turns of a few seconds in one process show what the middleware costs
 * (docs/operations.md "Compression"). 5,000 guests (BENCH_GUESTS), 50 connections, 4 s a turn.
 */
import { doorWithGuests } from './door.js';
import { load } from '../support.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 5000);
const on = await doorWithGuests(GUESTS);
const off = await doorWithGuests(GUESTS, { env: { HTTP_COMPRESSION: 'off' } });
const cpuPerScan: Record<string, number[]> = {};
for (let round = 0; round < 4; round++) {
  const order = round % 2 === 0 ? ([['on', on], ['off', off]] as const) : ([['off', off], ['on', on]] as const);
  for (const [name, door] of order) {
    for (const acceptEncoding of ['', 'gzip, deflate, br']) {
      const headers = acceptEncoding ? { ...door.headers, 'accept-encoding': acceptEncoding } : door.headers;
      const cpu = process.cpuUsage();
      const result = await load({ url: `${door.service.url}/checkin/v1/api/guests/${door.eventId}/checkin`, method: 'POST', headers, connections: 50, durationSec: 4, bodies: door.bodies });
      const used = process.cpuUsage(cpu);
      (cpuPerScan[`${name}${acceptEncoding ? ', Accept-Encoding' : ''}`] ??= []).push((used.user + used.system) / result.total);
    }
  }
}
for (const [name, values] of Object.entries(cpuPerScan)) {
  const mean = values.reduce((a, b) => a + b) / values.length;
  console.log(`compression ${name.padEnd(22)} ${values.map((v) => v.toFixed(0)).join(', ')} µs CPU per scan (mean ${mean.toFixed(0)})`);
}
await on.service.close();
await off.service.close();
process.exit(0);
