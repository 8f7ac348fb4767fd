import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, signInToDashboard } from '../support/browser.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The dashboard's "Sign out" revokes the refresh token (RFC 7009, docs/analytics.md, Signing in):
 * a copy of it (another tab's, one read off the page's memory) no longer refreshes.
 */
const hour = 3_600_000;

let service: TestService;
let browser: Browser;
let client: Client;

beforeAll(async () => {
  service = await startTestService({});
  browser = await launchChromium();
  client = await createClient(service);
  const reply = await client.call('POST', '/checkin/v1/api/event', { title: 'Sign-out', startTime: new Date(Date.now() - hour).toISOString(), endTime: new Date(Date.now() + hour).toISOString() });
  expect(reply.status).toBe(200);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

describe('dashboard sign-out', () => {
  it('posts the refresh token to the revocation endpoint, after which it is refused', async () => {
    const page = await browser.newPage();
    let refreshToken: string | undefined;
    page.on('response', async (response) => {
      if (!response.url().endsWith('/core/connect/token') || response.request().method() !== 'POST') return;
      const body = (await response.json().catch(() => ({}))) as { refresh_token?: string };
      if (body.refresh_token) refreshToken = body.refresh_token;
    });
    const revoked = page.waitForRequest((request) => request.url().endsWith('/core/connect/revocation'), { timeout: 30_000 });
    await signInToDashboard(page, service.url, client);
    await expect.poll(() => refreshToken, { timeout: 20_000 }).toEqual(expect.any(String));
    await page.getByRole('button', { name: 'Sign out' }).click();
    const request = await revoked;
    const form = new URLSearchParams(request.postData() ?? '');
    expect(form.get('token')).toBe(refreshToken);
    expect(form.get('token_type_hint')).toBe('refresh_token');
    expect(form.get('client_id')).toBe('checkin-app');
    expect((await request.response())?.status()).toBe(200);
    expect(await page.locator('#login').isVisible()).toBe(true);
    const refreshed = await fetch(`${service.url}/core/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: refreshToken! }),
    });
    expect(refreshed.status).toBe(400);
    await page.close();
  });
});
