/**
 * npx tsx bench/profile/compression-cost.ts: what the `compression` middleware costs on an answer
 * it then sends as it is (245 bytes, under its 1 KiB threshold), on a bare express route: CPU per
 * request of this process (the server; the load generator runs in a child), without the
 * middleware and with it, alternating, four rounds. Why the door's scans skip it
 * (src/http/middleware/compression.ts, docs/operations.md "Compression").
 */
import compression from 'compression';
import express from 'express';
import { listen } from '../ceiling.js';
import { load } from '../support.js';

const answer = {
  result: 'admitted',
  guest: { id: '0193e3c0-0000-7000-8000-000000000000', firstName: 'Firstname', lastName: 'Lastname', plusOnes: 1, admittedAt: '2026-01-01T10:00:00.000Z', tags: ['vip'] },
  scanId: 'abcdefabcdef',
  at: '2026-01-01T10:00:00.000Z',
};

async function cpuPerRequest(withCompression: boolean): Promise<number> {
  const app = express();
  app.set('etag', false);
  if (withCompression) app.use(compression());
  app.post('/scan', (_req, res) => void res.json(answer));
  const server = await listen(app);
  const cpu = process.cpuUsage();
  const result = await load({ url: `${server.url}/scan`, method: 'POST', headers: { 'accept-encoding': 'gzip, deflate, br' }, connections: 10, durationSec: 4 });
  const used = process.cpuUsage(cpu);
  await server.close();
  return (used.user + used.system) / result.total;
}

const rows: Record<string, number[]> = { without: [], with: [] };
for (let round = 0; round < 4; round++) {
  rows.without!.push(await cpuPerRequest(false));
  rows.with!.push(await cpuPerRequest(true));
}
for (const [name, values] of Object.entries(rows)) console.log(`${name.padEnd(8)} compression: ${values.map((v) => v.toFixed(1)).join(', ')} µs CPU per request`);
process.exit(0);
