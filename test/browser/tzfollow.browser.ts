import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, signInToDashboard } from '../support/browser.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The dashboard's event picker shows each event's start on the clock the server reads the event
 * on (docs/identifiers.md "Time zones"): a Windows zone name mapped to IANA, unknown text
 * skipped for the account's zone. Debian's chromium driven by playwright-core, as dashhunt.
 */

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  service = await startTestService({});
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

async function newEvent(client: Client, fields: Record<string, unknown>): Promise<void> {
  const reply = await client.call('POST', '/checkin/v1/api/event', fields);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
}

const signIn = (page: Page, client: Client) => signInToDashboard(page, service.url, client);

describe('/dashboard event picker', () => {
  it("shows each start on the server's clock for the event: a Windows zone name as its IANA zone, unknown text and no zone as the account's zone", async () => {
    const client = await createClient(service);
    expect((await client.call('PUT', '/users/v1/api/user', { id: client.id, timeZoneId: 'Asia/Tokyo' })).status).toBe(204);
    // 08:00Z on 12 December: 19:00 in Sydney (AEDT, +11:00), 17:00 in Tokyo (+09:00).
    const at = { startTime: '2026-12-12T08:00:00Z', endTime: '2026-12-12T12:00:00Z' };
    await newEvent(client, { title: 'Windows name', ...at, timeZoneId: 'AUS Eastern Standard Time' });
    await newEvent(client, { title: 'Display name', ...at, timeZoneId: '(UTC+10:00) Canberra, Melbourne, Sydney' });
    await newEvent(client, { title: 'No zone', ...at });
    await newEvent(client, { title: 'IANA name', ...at, timeZoneId: 'Australia/Sydney' });
    const page = await browser.newPage();
    await signIn(page, client);
    const options = (await page.locator('#event option').allTextContents()).sort();
    expect(options).toEqual([
      'Display name (2026-12-12 17:00)',
      'IANA name (2026-12-12 19:00)',
      'No zone (2026-12-12 17:00)',
      'Windows name (2026-12-12 19:00)',
    ]);
    await page.close();
  });

  it('labels a start shown in UTC as UTC (no zone on the event or the account)', async () => {
    const client = await createClient(service);
    await newEvent(client, { title: 'Nowhere', startTime: '2026-12-12T08:00:00Z', endTime: '2026-12-12T12:00:00Z' });
    const page = await browser.newPage();
    await signIn(page, client);
    expect(await page.locator('#event option').allTextContents()).toEqual(['Nowhere (2026-12-12 08:00 UTC)']);
    await page.close();
  });
});
