/**
 * The embedded mailer's outbox keeps OUTBOX_RETENTION_DAYS (default 30): the retention worker
 * removes older `.eml` files, newer ones stay, and a message handed over again while its file is
 * kept is still not written twice. Before, the folder kept every email ever sent (each with a
 * guest's address, name and code) for as long as the service ran.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OutboxMailer } from '../../src/adapters/mailer/outbox.js';
import type { Services } from '../../src/commands/services.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { RetentionWorker } from '../../src/workers/retention.js';

const DAY = 86_400_000;
const now = new Date('2026-12-07T12:00:00.000Z');
let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-growth-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const services = { logger: createLogger('silent'), clock: { now: () => now } } as unknown as Services;
const worker = (days: number) => new RetentionWorker(services, { exportDir: dir, outboxDir: dir }, 3_600_000, { dir, days });

const message = (key: string) => ({
  messageKey: key,
  from: { email: 'events@example.com' },
  to: { email: 'ann@example.com', name: 'Ann' },
  subject: 'Your ticket',
  html: '<p>Welcome</p>',
});

/** Writes a message through the mailer and dates its file `ageMs` before `now`. */
async function sentAgo(mailer: OutboxMailer, key: string, ageMs: number): Promise<string> {
  const { providerMessageId } = await mailer.send(message(key));
  const file = path.join(dir, providerMessageId);
  const at = new Date(now.getTime() - ageMs);
  fs.utimesSync(file, at, at);
  return file;
}

describe('outbox retention (OUTBOX_RETENTION_DAYS)', () => {
  it('removes the emails older than the window and keeps the newer ones and everything else', async () => {
    const mailer = new OutboxMailer(dir);
    const old = await sentAgo(mailer, 'old-invitation', 31 * DAY);
    const recent = await sentAgo(mailer, 'recent-invitation', 29 * DAY);
    const other = path.join(dir, 'README.txt');
    fs.writeFileSync(other, 'not a message');
    fs.utimesSync(other, new Date(now.getTime() - 90 * DAY), new Date(now.getTime() - 90 * DAY));

    expect(await worker(30).pruneOutbox(now)).toBe(1);
    expect(fs.existsSync(old)).toBe(false);
    expect(fs.existsSync(recent)).toBe(true);
    expect(fs.existsSync(other)).toBe(true);
  });

  it('still writes a message handed over again inside the window once', async () => {
    const mailer = new OutboxMailer(dir);
    const recent = await sentAgo(mailer, 'recent-invitation', 29 * DAY);
    const before = fs.statSync(recent).mtimeMs;
    await worker(30).pruneOutbox(now);
    await mailer.send({ ...message('recent-invitation'), subject: 'a second copy' });
    expect(fs.readdirSync(dir)).toEqual(['recent-invitation.eml']);
    expect(fs.statSync(recent).mtimeMs).toBe(before);
    expect(fs.readFileSync(recent, 'utf8')).not.toContain('a second copy');
  });

  it('keeps every email with 0, and a folder not made yet is no failure', async () => {
    const mailer = new OutboxMailer(dir);
    const old = await sentAgo(mailer, 'old-invitation', 3650 * DAY);
    expect(await worker(0).pruneOutbox(now)).toBe(0);
    expect(fs.existsSync(old)).toBe(true);
    const missing = new RetentionWorker(services, { exportDir: dir }, 3_600_000, { dir: path.join(dir, 'none'), days: 30 });
    expect(await missing.pruneOutbox(now)).toBe(0);
  });

  it('reads OUTBOX_RETENTION_DAYS: 30 by default, 0 for ever, a word refused', () => {
    expect(loadConfig({}).comms.outboxRetentionDays).toBe(30);
    expect(loadConfig({ OUTBOX_RETENTION_DAYS: '0' }).comms.outboxRetentionDays).toBe(0);
    expect(() => loadConfig({ OUTBOX_RETENTION_DAYS: 'month' })).toThrow(/OUTBOX_RETENTION_DAYS/);
  });
});
