/**
 * npx tsx bench/profile/ids.ts [guests] [parts]: what the shape of the ids costs the event store,
 * with raw better-sqlite3 and nothing else. Per guest, in transactions of 200 at synchronous=FULL,
 * the two events an import writes (the registration on the guest's stream, the customId
 * reservation on its own stream) into a table shaped like the embedded event store's; then the
 * same with the data-key row and the HMAC-named reservation stream that personal-data
 * encryption adds. Each variant is run with random (v4) and time-ordered (v7) ids for the
 * guest and the events, and (v7) with the customIds the benches send (`crm-0`, `crm-1`, ...)
 * and with random ones (UUIDs from a CRM). Prints wall time, CPU per guest and the bytes
 * written (WAL and file).
 *
 * With `parts`: what each row encryption writes adds (v7 ids; the key row, then the sealed data,
 * then the HMAC-named reservation), with sequential and with random customIds: the least CPU per
 * guest of BENCH_ROUNDS (default 3) alternating rounds.
 */
import { rawEventRows, type EventRowsVariant, type SealedParts } from '../ceiling.js';

const GUESTS = Number(process.argv[2] ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const customIdsName = (customIds: EventRowsVariant['customIds']) => (customIds === 'random' ? 'random (UUIDs)' : 'sequential (`crm-0`, `crm-1`, ...)');

if (process.argv[3] === 'parts') {
  const steps: [string, SealedParts][] = [
    ['plain rows', { keyRow: false, sealedData: false, hashedName: false }],
    ['+ key row', { keyRow: true, sealedData: false, hashedName: false }],
    ['+ sealed data', { keyRow: true, sealedData: true, hashedName: false }],
    ['+ HMAC-named reservation', { keyRow: true, sealedData: true, hashedName: true }],
  ];
  console.log(`| customIds (${GUESTS.toLocaleString('en-US')} guests, v7 ids, CPU per guest, best of ${ROUNDS}) | ${steps.map(([name]) => name).join(' | ')} |`);
  console.log(`| --- | ${steps.map(() => '---').join(' | ')} |`);
  // Every variant once per round, rounds alternating, the least CPU of each kept: other work on
  // the machine only ever adds to a figure.
  const kinds = ['sequential', 'random'] as const;
  const best = kinds.map(() => steps.map(() => Infinity));
  for (let round = 0; round < ROUNDS; round++) {
    kinds.forEach((customIds, k) =>
      steps.forEach(([, sealed], s) => (best[k]![s] = Math.min(best[k]![s]!, rawEventRows({ ids: 'v7', sealed, customIds, guests: GUESTS }).cpuPerGuest))),
    );
  }
  kinds.forEach((customIds, k) => console.log(`| ${customIdsName(customIds)} | ${best[k]!.map((us) => `${us.toFixed(1)} µs`).join(' | ')} |`));
} else {
  const variants: EventRowsVariant[] = [
    { ids: 'v4', sealed: false },
    { ids: 'v7', sealed: false },
    { ids: 'v4', sealed: true },
    { ids: 'v7', sealed: true },
    { ids: 'v7', sealed: false, customIds: 'random' },
    { ids: 'v7', sealed: true, customIds: 'random' },
  ];
  console.log(`| rows (${GUESTS.toLocaleString('en-US')} guests, two events each, transactions of 200, FULL) | ids | customIds | wall time | CPU per guest | file + WAL |`);
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const variant of variants) {
    const r = rawEventRows({ ...variant, guests: GUESTS });
    const rows = variant.sealed ? 'as with encryption on (key row, HMAC-named reservation, sealed data)' : 'as with encryption off';
    console.log(`| ${rows} | ${variant.ids} | ${customIdsName(variant.customIds)} | ${r.seconds.toFixed(1)} s | ${r.cpuPerGuest.toFixed(1)} µs | ${r.megabytes.toFixed(0)} MB |`);
  }
}
