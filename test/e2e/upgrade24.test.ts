/**
 * An upgrade from release b4fedaa on the embedded default: the new service starts on a copy of a
 * DATA_DIR that release wrote (test/fixtures/upgrade-b4fedaa, made by its make-fixture.ts driving
 * the old code over HTTP; its README says what it holds). Since b4fedaa: team member registrations
 * are sealed per registration, plain ids (event, team member) keep their case, the guests read
 * model has `barcodeTrimmed`, Idempotency-Key is taken by a swap, refresh tokens have a reuse grace.
 * Checked: every old resource reads back as the old release answered it, before and after a
 * `npm run projections -- rebuild`; old tokens, refresh tokens and sign-ins; the door by old padded
 * barcodes; old idempotent replies; old ids in upper case; removal and erasure of old data; no 5xx.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneCommsHistory } from '../../src/commands/comms-history-retention.js';
import { loggedLines } from '../support/log-lines.js';
import { request, startTestService, type TestService } from '../support/service.js';

const fixture = path.resolve(__dirname, '../fixtures/upgrade-b4fedaa');
const repoRoot = path.resolve(__dirname, '../..');
const old = JSON.parse(fs.readFileSync(path.join(fixture, 'old-answers.json'), 'utf8')) as {
  state: Record<string, any>;
  answers: Record<string, { status: number; body: unknown }>;
};
const s = old.state;
/** The old release's tokens name `<PUBLIC_URL>/core` as their issuer: an operator keeps PUBLIC_URL across the upgrade. */
const env = { PUBLIC_URL: 'https://checkin.upgrade24.test', WEBHOOK_ALLOW_INSECURE: 'true' };

/**
 * The service's clock: an hour after the old release stopped, going on at real speed. The fixture
 * is committed, and on today's clock its idempotent replies (kept 24 h) would have expired.
 */
const offsetMs = Date.now() - (Date.parse(s.stoppedAt) + 3_600_000);
const clock = { now: () => new Date(Date.now() - offsetMs) };

let dataDir: string;
let service: TestService;
let log: ReturnType<typeof loggedLines>;
/** Every answer of this test: none may be a 5xx. */
const statuses: Array<{ what: string; status: number }> = [];

async function start(): Promise<void> {
  log = loggedLines('info');
  service = await startTestService(env, { dataDir, logger: log.logger, clock });
}

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'upgrade24-'));
  fs.cpSync(path.join(fixture, 'datadir'), dataDir, { recursive: true });
  await start();
});

afterAll(async () => {
  await service?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function call(method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}) {
  const reply = await request(service.url, method, pathname, body, headers);
  statuses.push({ what: `${method} ${pathname}`, status: reply.status });
  return reply;
}
const as = (token: string, key: string) => (method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}) =>
  call(method, pathname, body, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': key, ...headers });
/**
 * The old release's access tokens were issued for a year (the fixture's README). Their signature is
 * checked on the real clock, not the service's: once a year has passed they are expired (401, the
 * first test checks that instead), and the callers sign in anew with the fixture's secrets.
 */
const tokensExpired = Date.now() >= (JSON.parse(Buffer.from(String(s.tokens.a).split('.')[1]!, 'base64url').toString('utf8')) as { exp: number }).exp * 1000;
const tokens = { a: s.tokens.a as string, b: s.tokens.b as string, door: s.tokens.door as string };
const A: ReturnType<typeof as> = (...args) => as(tokens.a, s.a.key)(...args);
const B: ReturnType<typeof as> = (...args) => as(tokens.b, s.b.key)(...args);
const D: ReturnType<typeof as> = (...args) => as(tokens.door, s.a.key)(...args);
const callers: Record<string, ReturnType<typeof as>> = { A, B, D };

async function freshTokens(): Promise<void> {
  const get = async (form: Record<string, string>) => {
    const reply = await tokenRequest(form);
    if (reply.status !== 200) throw new Error(`token: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body.access_token as string;
  };
  tokens.a = await get({ grant_type: 'client_credentials', client_id: s.a.id, client_secret: s.a.secret });
  tokens.b = await get({ grant_type: 'client_credentials', client_id: s.b.id, client_secret: s.b.secret });
  tokens.door = await get({ grant_type: 'password', client_id: 'checkin-app', username: 'door-one', password: 'north gate scanner 1' });
}

function tokenRequest(form: Record<string, string>) {
  return call('POST', '/core/connect/token', new URLSearchParams(form).toString(), { 'content-type': 'application/x-www-form-urlencoded' });
}

/** An answer as compared: a personal-data document's `generatedAt` is the time it was asked for. */
function comparable(body: unknown): unknown {
  if (body && typeof body === 'object' && !Array.isArray(body) && 'generatedAt' in body) {
    const { generatedAt: _now, ...rest } = body as Record<string, unknown>;
    return rest;
  }
  return body;
}

async function everyOldAnswer(): Promise<void> {
  for (const [key, expected] of Object.entries(old.answers)) {
    const [who, pathname] = key.split(' ', 2) as [string, string];
    const reply = await callers[who]!('GET', pathname);
    expect({ key, status: reply.status, body: comparable(reply.body) }).toEqual({ key, status: expected.status, body: comparable(expected.body) });
  }
}

const scanAt = (event: string, body: object, kind = 'checkin') => A('POST', `/checkin/v1/api/guests/${event}/${kind}`, { gate: 'South', ...body });

describe('upgrade from b4fedaa on its embedded DATA_DIR', () => {
  it('rebuilds the guests read model at the first start (barcodeTrimmed), and nothing it need not', () => {
    const warned = log.lines.find((l) => String(l.msg).startsWith('projections: read models built by another version'));
    expect(warned).toBeDefined();
    expect((warned!.outdated as Array<{ name: string }>).map((o) => o.name)).toEqual(['guests']);
    expect(log.lines.some((l) => l.msg === 'projections upgrade rebuild: finished')).toBe(true);
  });

  it('answers every old resource as the old release did, to its old tokens', async () => {
    if (tokensExpired) {
      // A year after the fixture was made: its tokens are expired, as any token is after its lifetime.
      expect((await A('GET', '/checkin/v1/api/events')).status).toBe(401);
      await freshTokens();
    }
    await everyOldAnswer();
  });

  it('matches an old padded barcode by what it holds, as guests written after the upgrade', async () => {
    // `PAD-003\t` was scanned bare under the old release: unknown barcode. Now it admits Cy.
    expect(s.scans.paddedBare.result).toBe('rejected');
    const cy = await scanAt(s.eUpper, { barcode: 'PAD-003' });
    expect(cy.status).toBe(200);
    expect({ result: cy.body.result, firstName: cy.body.guest?.firstName, barcode: cy.body.guest?.barcode }).toEqual({ result: 'admitted', firstName: 'Cy', barcode: 'PAD-003\t' });
    // `  PAD-002 ` (Bob, checked out under the old release) by what it holds, and as stored.
    const bob = await scanAt(s.eUpper, { barcode: 'PAD-002' });
    expect({ result: bob.body.result, firstName: bob.body.guest?.firstName }).toEqual({ result: 'admitted', firstName: 'Bob' });
    // The lowercase-id event's ` LOW-1 `, admitted before: found by what it holds, already admitted.
    const hal = await scanAt(s.eLower, { barcode: 'LOW-1' });
    expect({ result: hal.body.result, reason: hal.body.reason, firstName: hal.body.guest?.firstName }).toEqual({ result: 'rejected', reason: 'already_admitted', firstName: 'Hal' });
    // The old block holds; the erased guest's barcode finds no one.
    const di = await scanAt(s.eUpper, { barcode: 'BC-004' });
    expect({ result: di.body.result, reason: di.body.reason }).toEqual({ result: 'rejected', reason: 'blocked' });
    const ed = await scanAt(s.eUpper, { barcode: 'BC-005' });
    expect({ result: ed.body.result, reason: ed.body.reason }).toEqual({ result: 'rejected', reason: 'not_found' });
    // The old door staff's token scans (it was issued before the upgrade).
    const byDoor = await D('POST', `/checkin/v1/api/guests/${s.eUpper}/checkin`, { customId: 'CUST-3' });
    expect({ status: byDoor.status, reason: byDoor.body.reason }).toEqual({ status: 200, reason: 'already_admitted' });
  });

  it('signs old team members in by their passwords, and refuses the one removed before the upgrade', async () => {
    for (const [username, password] of [['door-one', 'north gate scanner 1'], ['door-two', 'north gate scanner 2'], ['door-four', 'north gate scanner 4']]) {
      const reply = await tokenRequest({ grant_type: 'password', client_id: 'checkin-app', username: username!, password: password! });
      expect({ username, status: reply.status }).toEqual({ username, status: 200 });
    }
    const gone = await tokenRequest({ grant_type: 'password', client_id: 'checkin-app', username: 'door-gone', password: 'north gate scanner 3' });
    expect({ status: gone.status, body: gone.body }).toEqual(s.goneSignIn);
  });

  it('takes old refresh tokens: an unused one and a rotated one refresh; a spent one ends its sign-in', async () => {
    const door = await tokenRequest({ grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: s.tokens.doorRefresh });
    expect(door.status).toBe(200);
    expect((await as(door.body.access_token, s.a.key)('GET', '/checkin/v1/api/teammembers/user/door-one/events')).status).toBe(200);
    const user = await tokenRequest({ grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: s.tokens.userRefresh });
    expect(user.status).toBe(200);
    // Spent under the old release, long past the reuse grace: refused, and the whole sign-in with it.
    const spent = await tokenRequest({ grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: s.tokens.userRefreshSpent });
    expect({ status: spent.status, error: spent.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    const after = await tokenRequest({ grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: user.body.refresh_token });
    expect(after.status).toBe(400);
    // The user's old access token is still good (a refresh token's reuse does not revoke access tokens), until its year is over.
    expect((await as(s.tokens.user, s.a.key)('GET', '/users/v1/api/users/email?email=org-a@example.com')).status).toBe(tokensExpired ? 401 : 200);
  });

  it('replays the old idempotent replies, and a new key is taken as before', async () => {
    const guest = await A('POST', '/checkin/v1/api/guest', s.keyedGuestBody, { 'idempotency-key': 'guest-keyed-1' });
    expect({ status: guest.status, replayed: guest.headers.get('idempotent-replayed'), body: guest.body }).toEqual({ status: 200, replayed: 'true', body: s.keyedGuest });
    const member = await A('POST', '/checkin/v1/api/teammember', s.tmKeyedBody, { 'idempotency-key': 'tm-keyed-1' });
    expect({ status: member.status, replayed: member.headers.get('idempotent-replayed'), body: member.body }).toEqual({ status: 200, replayed: 'true', body: s.tmKeyed });
    const reused = await A('POST', '/checkin/v1/api/guest', { ...s.keyedGuestBody, firstName: 'Other' }, { 'idempotency-key': 'guest-keyed-1' });
    expect({ status: reused.status, code: reused.body.code }).toEqual({ status: 422, code: 'idempotency_key_reused' });
    const body = { eventId: s.eUpper, firstName: 'Nu', barcode: 'NEW-1' };
    const first = await A('POST', '/checkin/v1/api/guest', body, { 'idempotency-key': 'after-upgrade-1' });
    const again = await A('POST', '/checkin/v1/api/guest', body, { 'idempotency-key': 'after-upgrade-1' });
    expect(first.status).toBe(200);
    expect({ replayed: again.headers.get('idempotent-replayed'), id: again.body.id }).toEqual({ replayed: 'true', id: first.body.id });
  });

  it('finds old upper-case ids as sent: an event updated, a team member removed, its tokens then refused', async () => {
    const renamed = await A('POST', '/checkin/v1/api/event', { id: s.eUpper, title: 'Upper Gala renamed', startTime: '2026-12-12T18:00:00Z', endTime: '2027-12-12T23:00:00Z' });
    expect(renamed.status).toBe(200);
    const events = (await A('GET', '/checkin/v1/api/events')).body.items as Array<{ id: string; title: string }>;
    expect(events.filter((e) => e.id.toLowerCase() === s.eUpper.toLowerCase()).map((e) => e.title)).toEqual(['Upper Gala renamed']);
    // Another client's event of the same id is untouched.
    expect(((await B('GET', '/checkin/v1/api/events')).body.items as Array<{ title: string }>).map((e) => e.title)).toEqual(['B same upper id']);

    expect((await D('GET', '/checkin/v1/api/teammembers/user/door-one/events')).status).toBe(200);
    expect((await A('DELETE', `/checkin/v1/api/teammember/${s.tmUpper}`)).status).toBe(204);
    expect((await D('GET', '/checkin/v1/api/teammembers/user/door-one/events')).status).toBe(401);
    const signIn = await tokenRequest({ grant_type: 'password', client_id: 'checkin-app', username: 'door-one', password: 'north gate scanner 1' });
    expect(signIn.status).toBe(400);
    // Created anew under the same id (the way to change a password), sealed now; its scans stay counted under it.
    const again = await A('POST', '/checkin/v1/api/teammember', { id: s.tmUpper, userName: 'door-one', password: 'north gate scanner 11', email: 'door1@example.com' });
    expect({ status: again.status, id: again.body.id }).toEqual({ status: 200, id: s.tmUpper });
    const team = (await A('GET', `/checkin/v1/api/team/event/${s.eUpper}`)).body as Array<{ teamMemberId: string; checkedIn: number }>;
    expect(team.find((t) => t.teamMemberId.toLowerCase() === s.tmUpper.toLowerCase())?.checkedIn).toBeGreaterThan(0);
  });

  it('removes an old team member created with an Idempotency-Key: the retry answers [erased] and creates no one', async () => {
    expect((await A('DELETE', '/checkin/v1/api/teammember/door-4')).status).toBe(204);
    const retried = await A('POST', '/checkin/v1/api/teammember', s.tmKeyedBody, { 'idempotency-key': 'tm-keyed-1' });
    expect({ status: retried.status, userName: retried.body.userName, email: retried.body.email }).toEqual({ status: 200, userName: '[erased]', email: '[erased]' });
    const gone = await tokenRequest({ grant_type: 'password', client_id: 'checkin-app', username: 'door-four', password: 'north gate scanner 4' });
    expect(gone.status).toBe(400);
  });

  it('erases an old guest by its customId', async () => {
    const erased = await A('POST', '/checkin/v1/api/guest/CUST-1/erase', { reason: 'after the upgrade' });
    expect(erased.status).toBe(200);
    const guest = await A('GET', `/checkin/v1/api/guest/${s.guests[0]}`);
    expect({ firstName: guest.body.firstName, barcode: guest.body.barcode, erased: guest.body.erased }).toEqual({ firstName: null, barcode: null, erased: true });
    const scan = await scanAt(s.eUpper, { barcode: 'BC-001' });
    expect(scan.body.reason).toBe('not_found');
  });

  it('rebuilds every read model with npm run projections -- rebuild to the same answers', async () => {
    const before: Record<string, unknown> = {};
    const reads = Object.keys(old.answers).filter((k) => k.startsWith('A ') || k.startsWith('B '));
    for (const key of reads) {
      const [who, pathname] = key.split(' ', 2) as [string, string];
      const reply = await callers[who]!('GET', pathname);
      before[key] = { status: reply.status, body: comparable(reply.body) };
    }
    await service.stop();
    const exit = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'src', 'cli', 'projections.ts'), 'rebuild'], {
        cwd: repoRoot,
        env: { ...process.env, DATA_DIR: dataDir, MONGO_URL: '', EVENTSTORE_URL: '', KAFKA_BROKERS: '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c) => (stderr += c));
      child.on('exit', (code) => resolve({ code, stderr }));
    });
    expect(exit.code, exit.stderr.slice(-2000)).toBe(0);
    await start();
    expect(log.lines.some((l) => String(l.msg).startsWith('projections: read models built by another version'))).toBe(false);
    for (const key of reads) {
      const [who, pathname] = key.split(' ', 2) as [string, string];
      const reply = await callers[who]!('GET', pathname);
      expect({ key, status: reply.status, body: comparable(reply.body) }).toEqual({ key, ...(before[key] as object) });
    }
    const cy = await scanAt(s.eUpper, { barcode: 'PAD-003' });
    expect(cy.body.reason).toBe('already_admitted');
  });

  it('keeps the old comms history until COMMS_HISTORY_RETENTION_DAYS has passed, then the hourly job deletes it from the read models', async () => {
    const listed = async () => ({
      events: ((await A('GET', '/comms/v1/api/comms/events?limit=100')).body.items as unknown[]).length,
      deliveries: ((await A('GET', '/comms/v1/api/comms/webhook/deliveries?limit=100')).body.items as unknown[]).length,
      invitations: ((await A('GET', '/comms/v1/api/comms/invitations?limit=100')).body.items as unknown[]).length,
    });
    const before = await listed();
    expect(before).toEqual({ events: 4, deliveries: 4, invitations: 3 });
    const store = service.platform.readStore;
    expect(await pruneCommsHistory(store, { days: 30 }, new Date(Date.parse(s.stoppedAt) + 29 * 86_400_000))).toEqual({ commsEvents: 0, deliveries: 0 });
    expect(await pruneCommsHistory(store, { days: 0 }, new Date(Date.parse(s.stoppedAt) + 400 * 86_400_000))).toEqual({ commsEvents: 0, deliveries: 0 });
    expect(await pruneCommsHistory(store, { days: 30 }, new Date(Date.parse(s.stoppedAt) + 31 * 86_400_000))).toEqual({ commsEvents: 4, deliveries: 4 });
    expect(await listed()).toEqual({ events: 0, deliveries: 0, invitations: 3 });
  });

  it('answered no request with a 5xx and logged no error', () => {
    expect(statuses.filter((r) => r.status >= 500)).toEqual([]);
    expect(log.lines.filter((l) => Number(l.level) >= 50)).toEqual([]);
  });
});
