/**
 * Master-key rotation on the day (docs/personal-data.md, Rotation): a start whose PII_MASTER_KEYS
 * lacks a master key that stored data keys are wrapped under is refused, naming the key id and how
 * many keys need it (before: the service started and answered ready, guests' personal data did not
 * open and customId writes failed 500); `rewrap-personal-data-keys` refuses up front in the same
 * words, and reports progress on stderr.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { clientToken, createClient, newEvent, startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'opshunt-pii-'));
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const admin = (args: string[], env: Record<string, string>) =>
  run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'admin.ts'), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dataDir, LOG_LEVEL: 'info', ...env },
  });
const [k1, k2] = [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')];
let service: TestService | undefined;
afterAll(async () => {
  await service?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('master keys removed too early', () => {
  it('refuses the start and the rewrap naming the missing master key id; once re-wrapped, the old key can go', async () => {
    service = await startTestService({ PII_MASTER_KEYS: `k1:${k1}` }, { dataDir });
    const client = await createClient({ get url() { return service!.url; } });
    const eventId = await newEvent(client);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', email: 'ann@example.com', customId: 'c-1' });
    expect(guest.status).toBe(200);
    await service.close();
    service = undefined;

    const refusal = /PII_MASTER_KEYS lacks master keys that stored data keys are wrapped under: "k1" \(\d+ data keys\)\. .*rewrap-personal-data-keys/;
    await expect(startTestService({ PII_MASTER_KEYS: `k2:${k2}` }, { dataDir })).rejects.toThrow(refusal);
    await expect(admin(['rewrap-personal-data-keys'], { PII_MASTER_KEYS: `k2:${k2}` })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/data keys are wrapped under master keys PII_MASTER_KEYS does not hold: "k1" \(\d+ data keys\); add them back next to the current key and run again\. Nothing was changed/),
    });

    const rewrap = await admin(['rewrap-personal-data-keys'], { PII_MASTER_KEYS: `k2:${k2},k1:${k1}`, PII_MASTER_KEY_ID: 'k2' });
    expect(JSON.parse(rewrap.stdout).rewrapped).toBeGreaterThanOrEqual(2); // the guest's key and the customId stream-name key
    expect(rewrap.stderr).toMatch(/"toRewrap":\d+.*rewrap-personal-data-keys: started/);
    expect(rewrap.stderr).toMatch(/"rewrapped":\d+.*rewrap-personal-data-keys: progress/);

    service = await startTestService({ PII_MASTER_KEYS: `k2:${k2}` }, { dataDir });
    client.token = await clientToken(service.url, client.id, client.clientSecret);
    const history = await client.call('GET', `/checkin/v1/api/guest/${guest.body.id}/history`);
    expect(history.body.events[0].data).toMatchObject({ firstName: 'Ann', email: 'ann@example.com' });
    expect((await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bob', customId: 'c-2' })).status).toBe(200);
  }, 240_000);
});
