/**
 * The browser tests' chromium (Debian's, driven by playwright-core) and the dashboard's sign-in,
 * shared by test/browser/*.browser.ts.
 */
import fs from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import type { Client } from './service.js';

const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Chromium with our flags (and `extraArgs`); a missing binary is an error naming what to install. */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  if (!fs.existsSync(executablePath)) throw new Error(`${executablePath} is missing: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  return chromium.launch({ executablePath, headless: true, args: [...flags, ...extraArgs] });
}

/** Signs `client` in on the dashboard at `baseUrl` and waits for the board. */
export async function signInToDashboard(page: Page, baseUrl: string, client: Client): Promise<void> {
  await page.goto(`${baseUrl}/dashboard`);
  await page.getByLabel('User name or email').fill(client.email);
  await page.getByLabel('Password').fill(client.password);
  await page.getByLabel('Subscription key').fill(client.subscriptionKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // Hang guard only: the password check is deliberately slow.
  await expect.poll(() => page.locator('#board').isVisible(), { timeout: 30_000 }).toBe(true);
}
