/**
 * npx tsx bench/profile/ids.ts [guests]: what the shape of the ids costs the event store, with
 * raw better-sqlite3 and nothing else. Per guest, in transactions of 200 at synchronous=FULL,
 * the two events an import writes (the registration on the guest's stream, the customId
 * reservation on its own stream) into a table shaped like the embedded event store's; then the
 * same with the data-key row and the HMAC-named reservation stream that personal-data
 * encryption adds. Each variant is run with random (v4) and time-ordered (v7) ids for the
 * guest and the events. Prints wall time, CPU per guest and the bytes written (WAL and file).
 */
import { rawEventRows } from '../ceiling.js';

const GUESTS = Number(process.argv[2] ?? 100_000);

console.log(`| rows (${GUESTS.toLocaleString('en-US')} guests, two events each, transactions of 200, FULL) | ids | wall time | CPU per guest | file + WAL |`);
console.log('| --- | --- | --- | --- | --- |');
for (const sealed of [false, true]) {
  for (const ids of ['v4', 'v7'] as const) {
    const r = rawEventRows({ ids, sealed, guests: GUESTS });
    const rows = sealed ? 'as with encryption on (key row, HMAC-named reservation, sealed data)' : 'as with encryption off';
    console.log(`| ${rows} | ${ids} | ${r.seconds.toFixed(1)} s | ${r.cpuPerGuest.toFixed(1)} µs | ${r.megabytes.toFixed(0)} MB |`);
  }
}
