import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, signInToDashboard } from '../support/browser.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The dashboard keeps its organizer signed in with the refresh token (docs/analytics.md, Signing
 * in): a 401 or an access token about to expire is answered by one refresh, and only a refused
 * refresh signs out. Debian's chromium driven by playwright-core, as dashboard.browser.ts.
 */
const hour = 3_600_000;

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

async function boardFor(): Promise<Client> {
  const client = await createClient(service);
  const reply = await client.call('POST', '/checkin/v1/api/event', { title: 'Refresh', startTime: new Date(Date.now() - hour).toISOString(), endTime: new Date(Date.now() + hour).toISOString() });
  expect(reply.status).toBe(200);
  return client;
}

const signIn = (page: Page, client: Client) => signInToDashboard(page, service.url, client);

const grantOf = (request: Request): string | null => (request.url().endsWith('/core/connect/token') ? new URLSearchParams(request.postData() ?? '').get('grant_type') : null);

describe('dashboard sessions', () => {
  it('on a 401 refreshes once, retries, and stays signed in; nothing lands in web storage', async () => {
    const client = await boardFor();
    const page = await browser.newPage();
    const grants: string[] = [];
    page.on('request', (request) => void (grantOf(request) && grants.push(grantOf(request)!)));
    let refusedOnce = false;
    // The first timeline poll answers 401, as the API does once the access token has expired.
    await page.route('**/timeline?*', async (route) => {
      if (refusedOnce) return route.continue();
      refusedOnce = true;
      await route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ code: 'unauthorized', message: 'the bearer token is not valid: expired' }) });
    });
    await signIn(page, client);
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 20_000 }).toContain('Updated');
    expect(grants).toEqual(['password', 'refresh_token']);
    expect(await page.locator('#board').isVisible()).toBe(true);
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    expect(stored).toBe('{}{}');
    await page.close();
  });

  it('refreshes before the access token expires, without waiting for a 401', async () => {
    const client = await boardFor();
    const page = await browser.newPage();
    const grants: string[] = [];
    page.on('request', (request) => void (grantOf(request) && grants.push(grantOf(request)!)));
    let unauthorized = 0;
    page.on('response', (response) => void (response.status() === 401 && unauthorized++));
    // The password grant's answer says the token lives 1 s: the next poll (5 s later) must refresh first.
    await page.route('**/core/connect/token', async (route) => {
      if (grantOf(route.request()) !== 'password') return route.continue();
      const reply = await route.fetch();
      await route.fulfill({ response: reply, json: { ...(await reply.json()), expires_in: 1 } });
    });
    await signIn(page, client);
    await expect.poll(() => grants, { timeout: 30_000 }).toContain('refresh_token');
    expect(unauthorized).toBe(0);
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 20_000 }).toContain('Updated');
    expect(await page.locator('#board').isVisible()).toBe(true);
    await page.close();
  });

  it('signs out when the refresh is refused', async () => {
    const client = await boardFor();
    const page = await browser.newPage();
    await page.route('**/timeline?*', (route) =>
      route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ code: 'unauthorized', message: 'the bearer token is not valid: expired' }) }),
    );
    await page.route('**/core/connect/token', async (route) => {
      if (grantOf(route.request()) !== 'refresh_token') return route.continue();
      await route.fulfill({ status: 400, contentType: 'application/json', body: JSON.stringify({ error: 'invalid_grant', error_description: 'refused' }) });
    });
    await page.goto(`${service.url}/dashboard`);
    await page.getByLabel('User name or email').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByLabel('Subscription key').fill(client.subscriptionKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#login-error').textContent(), { timeout: 30_000 }).toContain('Sign in again');
    expect(await page.locator('#board').isVisible()).toBe(false);
    await page.close();
  });
});
