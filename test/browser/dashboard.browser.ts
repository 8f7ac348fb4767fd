import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/** Debian's chromium (apt-get install chromium); playwright-core downloads no browser. */
/** Where the screenshot goes; `SCREENSHOT_PATH=docs/dashboard.png` refreshes the one in the docs. */
const screenshotPath = process.env.SCREENSHOT_PATH ?? path.join(os.tmpdir(), `dashboard-${process.pid}.png`);

let service: TestService;
let browser: Browser;
let client: Client;
let eventId: string;
const guests: string[] = [];

beforeAll(async () => {
  service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const event = await client.call('POST', '/checkin/v1/api/event', {
    title: 'Winter Gala',
    startTime: new Date(Date.now() - 3_600_000).toISOString(),
    endTime: new Date(Date.now() + 3_600_000).toISOString(),
    timeZoneId: 'Europe/Berlin',
  });
  eventId = event.body.id;
  const template = await client.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', html: '<p>Dear {{firstName}}</p>' });
  for (const [i, name] of ['Ada', 'Ben', 'Cleo', 'Dev'].entries()) {
    const guest = await client.call('POST', '/checkin/v1/api/guest', {
      eventId,
      firstName: name,
      lastName: 'Guest',
      email: `${name.toLowerCase()}@example.com`,
      commsTemplateId: template.body.id,
      plusOnes: i === 0 ? 2 : 0,
      isGroup: i === 0,
    });
    guests.push(guest.body.id);
  }
  const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();
  await scan({ guestId: guests[0], gate: 'North', at: minutesAgo(25) });
  await scan({ guestId: guests[1], gate: 'South', at: minutesAgo(12) });
  await scan({ barcode: 'unknown-code', gate: 'North', at: minutesAgo(8) });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

async function scan(body: Record<string, unknown>) {
  const reply = await client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
}

describe('/dashboard in a real browser', () => {
  it('signs in with the password grant, shows the figures, follows a new scan, and fits a phone', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 1300 } });
    const page = await context.newPage();
    const origins = new Set<string>();
    page.on('request', (request) => void origins.add(new URL(request.url()).origin));
    const consoleErrors: string[] = [];
    page.on('console', (message) => void (message.type() === 'error' && consoleErrors.push(message.text())));

    await page.goto(`${service.url}/dashboard`);
    // Every field is reachable by its label (accessibility) and the form by keyboard alone.
    await page.getByLabel('User name or email').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByLabel('Subscription key').fill(client.subscriptionKey);
    await page.getByLabel('Subscription key').press('Enter');

    const insideNow = page.locator('#inside-now');
    await expect.poll(() => insideNow.textContent(), { timeout: 15_000 }).toBe('4');
    expect(await page.locator('#rejected').textContent()).toBe('1');
    await expect.poll(() => page.locator('#gates').textContent(), { timeout: 15_000 }).toContain('North');
    expect(await page.locator('#rejects').textContent()).toContain('not found');
    await expect.poll(() => page.locator('#funnel').textContent(), { timeout: 15_000 }).toContain('Invitation');
    expect(await page.locator('#arrivals-chart canvas').count()).toBeGreaterThan(0);
    // The token is kept in memory only.
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie])).toEqual([0, 0, '']);

    // A scan at the door: the page's next poll shows it.
    await scan({ guestId: guests[2], gate: 'South' });
    await expect.poll(() => insideNow.textContent(), { timeout: 20_000 }).toBe('5');

    fs.mkdirSync(path.dirname(screenshotPath), { recursive: true });
    await page.screenshot({ path: screenshotPath, fullPage: true });
    expect(fs.statSync(screenshotPath).size).toBeGreaterThan(10_000);

    // Phone width: nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth), { timeout: 15_000 }).toBeLessThanOrEqual(390);

    expect([...origins]).toEqual([service.url]);
    expect(consoleErrors).toEqual([]);
    await context.close();
  });

  it('answers a wrong password with a message and stays signed out', async () => {
    const page = await browser.newPage();
    await page.goto(`${service.url}/dashboard`);
    await page.getByLabel('User name or email').fill(client.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByLabel('Subscription key').fill(client.subscriptionKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Hang guard only: the password check is deliberately slow, more so on a loaded machine.
    await expect.poll(() => page.locator('#login-error').textContent(), { timeout: 20_000 }).toContain('Could not sign in');
    expect(await page.locator('#board').isHidden()).toBe(true);
    await page.close();
  });
});
