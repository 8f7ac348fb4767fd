/**
 * npx tsx bench/profile/ids.ts [guests]: what the shape of the ids costs the event store, with
 * raw better-sqlite3 and nothing else. Per guest, in transactions of 200 at synchronous=FULL,
 * the two events an import writes (the registration on the guest's stream, the customId
 * reservation on its own stream) into a table shaped like the embedded event store's; then the
 * same with the data-key row and the HMAC-named reservation stream that personal-data
 * encryption adds. Each variant is run with random (v4) and time-ordered (v7) ids for the
 * guest and the events. Prints wall time, CPU per guest and the bytes written (WAL and file).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { v7 } from 'uuid';

const GUESTS = Number(process.argv[2] ?? 100_000);
const BATCH = 200;

interface Variant {
  ids: 'v4' | 'v7';
  /** The data-key row, the HMAC-named reservation stream and sealed-size data (encryption on). */
  sealed: boolean;
}

function run({ ids, sealed }: Variant): { seconds: number; cpuPerGuest: number; megabytes: number } {
  const newId = ids === 'v7' ? () => v7() : () => crypto.randomUUID();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-ids-'));
  const db = new Database(path.join(dir, 'events.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(
    'CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL, revision INTEGER NOT NULL, ' +
      'type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, recorded_at TEXT NOT NULL, UNIQUE (stream, revision));' +
      'CREATE TABLE personal_data_keys (guest_id TEXT NOT NULL UNIQUE, wrapped TEXT, master_key_id TEXT, created_at TEXT NOT NULL, erased_at TEXT)',
  );
  const insertEvent = db.prepare('INSERT INTO events (id, stream, revision, type, data, metadata, recorded_at) VALUES (?, ?, 0, ?, ?, ?, ?)');
  const insertKey = db.prepare('INSERT INTO personal_data_keys (guest_id, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?)');
  const nameKey = crypto.randomBytes(32);
  const eventId = 'stadium';
  const batch = db.transaction((start: number) => {
    const now = new Date().toISOString();
    const metadata = JSON.stringify({ tenantId: 'client', actor: { type: 'client', id: 'client' }, correlationId: crypto.randomUUID(), occurredAt: now });
    for (let i = start; i < start + BATCH; i++) {
      const guestId = newId();
      const fields = { firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `BC-${i}`, customId: `crm-${i}` };
      if (sealed) {
        const personalData = { keyId: `client:${guestId}`, alg: 'A256GCM', ciphertext: crypto.randomBytes(28 + JSON.stringify(fields).length).toString('base64url') };
        insertKey.run(`client:${guestId}`, crypto.randomBytes(71).toString('base64url'), 'm1', now);
        insertEvent.run(newId(), `guest-client:${guestId}`, 'GuestRegistered', JSON.stringify({ guestId, eventId, personalData }), metadata, now);
        const name = crypto.createHmac('sha256', nameKey).update(`client:${eventId}\n${fields.customId}`).digest('base64url');
        insertEvent.run(newId(), `guestcustomid-client:${eventId}:#n1.${name}`, 'GuestCustomIdReserved', JSON.stringify({ guestId }), metadata, now);
      } else {
        insertEvent.run(newId(), `guest-client:${guestId}`, 'GuestRegistered', JSON.stringify({ guestId, eventId, ...fields }), metadata, now);
        insertEvent.run(newId(), `guestcustomid-client:${eventId}:${fields.customId}`, 'GuestCustomIdReserved', JSON.stringify({ guestId }), metadata, now);
      }
    }
  });
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (let start = 0; start < GUESTS; start += BATCH) batch(start);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  db.close();
  const megabytes = fs.readdirSync(dir).reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0) / 1e6;
  fs.rmSync(dir, { recursive: true, force: true });
  return { seconds, cpuPerGuest: (used.user + used.system) / GUESTS, megabytes };
}

console.log(`| rows (${GUESTS.toLocaleString('en-US')} guests, two events each, transactions of ${BATCH}, FULL) | ids | wall time | CPU per guest | file + WAL |`);
console.log('| --- | --- | --- | --- | --- |');
for (const sealed of [false, true]) {
  for (const ids of ['v4', 'v7'] as const) {
    const r = run({ ids, sealed });
    const rows = sealed ? 'as with encryption on (key row, HMAC-named reservation, sealed data)' : 'as with encryption off';
    console.log(`| ${rows} | ${ids} | ${r.seconds.toFixed(1)} s | ${r.cpuPerGuest.toFixed(1)} µs | ${r.megabytes.toFixed(0)} MB |`);
  }
}
