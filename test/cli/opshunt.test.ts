/**
 * Rotating the secrets keyring (WEBHOOK_ENCRYPTION_KEYS, docs/webhooks.md): `npm run admin --
 * reencrypt-secrets` encrypts the stored webhook secrets and the events' ticket signing keys again
 * under the current key, so the old key can be removed and both keep working; run again, it
 * changes nothing; a key id that stored secrets still need and the keyring lacks is named, exit 1.
 */
import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { clientToken, createClient, startTestService, type TestService } from '../support/service.js';
import { newTicketEvent, newTicketedGuest } from '../support/tickets.js';
import { loggedLines } from '../support/log-lines.js';

const run = promisify(execFile);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'opshunt-'));
const k1 = randomBytes(32).toString('base64url');
const k2 = randomBytes(32).toString('base64url');
const k3 = randomBytes(32).toString('base64url');
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const keys = (list: string, current: string) => ({ WEBHOOK_ENCRYPTION_KEYS: list, WEBHOOK_ENCRYPTION_KEY_ID: current });
const admin = (args: string[], env: Record<string, string>) =>
  run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'admin.ts'), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env },
  });

// A receiver that keeps each delivery's signature header and raw body.
const received: { signature: string; body: string }[] = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    received.push({ signature: String(req.headers['x-service-signature']), body });
    res.end();
  });
});
let service: TestService | undefined;
afterAll(async () => {
  await service?.close();
  receiver.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const start = (env: Record<string, string>) =>
  startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '10', ...env }, { dataDir });

describe('reencrypt-secrets: rotating WEBHOOK_ENCRYPTION_KEYS', () => {
  it('re-encrypts webhook secrets and ticket keys under the current key, so the old key can go; idempotent; names a key still needed', async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

    service = await start(keys(`k1:${k1}`, 'k1'));
    // The client's calls follow the service across restarts (a new port each time).
    const client = await createClient({ get url() { return service!.url; } }, { commsApiEnabled: true, senderTrusted: true });
    const configured = await client.call('POST', '/comms/v1/api/comms/webhook', { url: receiverUrl });
    expect(configured.status, JSON.stringify(configured.body)).toBe(200);
    const secret = configured.body.secret as string;
    const eventId = await newTicketEvent(client);
    const first = await newTicketedGuest(client, eventId);
    const keysBefore = (await client.call('GET', `/checkin/v1/api/event/${eventId}/ticket-keys`)).body;
    await service.close();
    service = undefined;

    // Step 2 of the rotation: the new key is current, the old one still in the list.
    const rotated = await admin(['reencrypt-secrets'], keys(`k2:${k2},k1:${k1}`, 'k2'));
    expect(JSON.parse(rotated.stdout)).toMatchObject({
      currentKeyId: 'k2',
      webhookSecrets: { reencrypted: 1, alreadyCurrent: 0 },
      ticketKeys: { reencrypted: 1, alreadyCurrent: 0 },
      missingKeys: [],
      failed: [],
    });
    expect(rotated.stdout + rotated.stderr).not.toContain(secret);
    const again = await admin(['reencrypt-secrets'], keys(`k2:${k2},k1:${k1}`, 'k2'));
    expect(JSON.parse(again.stdout)).toMatchObject({ webhookSecrets: { reencrypted: 0, alreadyCurrent: 1 }, ticketKeys: { reencrypted: 0, alreadyCurrent: 1 } });

    // Step 3: the old key removed. The account's secret is unchanged and signs; the event's key pair is the same and signs new tickets.
    service = await start(keys(`k2:${k2}`, 'k2'));
    client.token = await clientToken(service.url, client.id, client.clientSecret); // the dev issuer's URL names the new port
    expect((await client.call('POST', '/comms/v1/api/comms/webhook/test', {})).status).toBe(200);
    for (let i = 0; i < 500 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(received).toHaveLength(1);
    const { signature, body } = received[0]!;
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature)!;
    expect(v1).toBe(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
    const second = await newTicketedGuest(client, eventId);
    expect(second.code).toMatch(/\S/);
    expect(second.code).not.toBe(first.code);
    expect((await client.call('GET', `/checkin/v1/api/event/${eventId}/ticket-keys`)).body).toEqual(keysBefore);
    await service.close();
    service = undefined;

    // Too early: k2 dropped while everything is under it. The start says so at once, naming it (before: the first delivery failed)...
    const { logger, lines } = loggedLines('warn');
    service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', ...keys(`k3:${k3}`, 'k3') }, { dataDir, logger });
    for (let i = 0; i < 500 && !lines.some((l) => l.level === 50); i++) await new Promise((r) => setTimeout(r, 10));
    expect(lines).toContainEqual(expect.objectContaining({
      level: 50,
      missingKeyIds: { k2: 1 },
      msg: expect.stringContaining('WEBHOOK_ENCRYPTION_KEYS lacks keys that stored webhook secrets are encrypted under: "k2" (1 webhooks)'),
    }));
    await service.close();
    service = undefined;
    // ...and the command says which key id is still needed.
    await expect(admin(['reencrypt-secrets'], keys(`k3:${k3}`, 'k3'))).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('stored secrets are encrypted under key ids the keyring does not hold: "k2" (1 webhook secrets, 1 ticket keys)'),
    });
  }, 240_000);
});
