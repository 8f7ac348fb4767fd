import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import type { CredentialVerifier, TokenSubject } from '../../src/identity/credentials.js';
import { createDevIdentityProvider, type DevIdentityProviderOptions } from '../../src/identity/dev-provider.js';

export const account = { id: 'b3b7f6a2-0c61-4a4e-9d55-2f1f8f0f6a11', secret: 'cs_s3cret+/=:% with space' };
export const accountUser = { username: '1234owner@example.com', password: 'owner-pass' };
export const teamMember = { id: 'tm-7', username: 'door.keeper', password: 'door-pass' };

/** Stands in for the accounts read model: one account with one user and one team member. */
export const fakeCredentials: CredentialVerifier = {
  async verifyClient(clientId, clientSecret): Promise<TokenSubject | null> {
    return clientId === account.id && clientSecret === account.secret
      ? { sub: account.id, tenant: account.id, role: 'client' }
      : null;
  },
  async verifyPassword(username, password): Promise<TokenSubject | null> {
    if (username === accountUser.username && password === accountUser.password) {
      return { sub: account.id, tenant: account.id, role: 'client' };
    }
    if (username === teamMember.username && password === teamMember.password) {
      return { sub: teamMember.id, tenant: account.id, role: 'team_member' };
    }
    return null;
  },
  async signInStands(): Promise<boolean> {
    return true;
  },
};

export function tempKeyFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'identity-test-'));
  return path.join(dir, 'keys', 'signing-key.json');
}

/**
 * A real HTTP server whose `/core` is whichever handler was mounted last, so a test can
 * "restart" the provider (a new instance from the key file) behind the same issuer URL.
 */
export interface IdentityServer {
  issuer: string;
  mount(handler: RequestHandler): void;
  /** Builds a provider for this server's issuer and mounts it. */
  startProvider(options?: Partial<DevIdentityProviderOptions>): void;
  close(): Promise<void>;
}

export async function startIdentityServer(keyFile: string): Promise<IdentityServer> {
  let current: RequestHandler = (_req, res) => void res.status(503).end();
  const app = express();
  app.use('/core', (req, res, next) => current(req, res, next));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/core`;
  return {
    issuer,
    mount(handler) {
      current = handler;
    },
    startProvider(options = {}) {
      current = createDevIdentityProvider({ issuer: () => issuer, keyFile, credentials: fakeCredentials, ...options });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface TokenResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export async function requestToken(
  issuer: string,
  params: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<TokenResponse> {
  const response = await fetch(`${issuer}/connect/token`, { method: 'POST', body: new URLSearchParams(params), headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

export async function accessToken(issuer: string, params: Record<string, string>): Promise<string> {
  const response = await requestToken(issuer, params);
  if (response.status !== 200) throw new Error(`token request failed: ${JSON.stringify(response.body)}`);
  return response.body.access_token as string;
}

export const clientCredentials = { grant_type: 'client_credentials', client_id: account.id, client_secret: account.secret };
export const teamMemberPassword = {
  grant_type: 'password',
  client_id: 'checkin-app',
  username: teamMember.username,
  password: teamMember.password,
};
