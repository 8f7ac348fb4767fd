/**
 * How many verify() calls per second, with the verified-token cache hit and without it.
 * Not a test (vitest only runs *.test.ts): `npx tsx test/identity/measure-verify-rate.ts`.
 */
import { createTokenVerifier, type TokenVerifier } from '../../src/identity/token-verifier.js';
import { accessToken, clientCredentials, startIdentityServer, tempKeyFile } from './support.js';

async function rate(label: string, verifier: TokenVerifier, tokens: string[], seconds = 2): Promise<void> {
  for (const token of tokens) await verifier.verify(token); // discovery, JWKS, warm-up
  let calls = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline) {
    for (let i = 0; i < 100; i++) await verifier.verify(tokens[calls++ % tokens.length]);
  }
  const perSecond = calls / ((performance.now() - started) / 1000);
  console.log(`${label.padEnd(44)} ${Math.round(perSecond).toLocaleString('en-US').padStart(12)} verify/s`);
}

const server = await startIdentityServer(tempKeyFile());
server.startProvider();
const token = await accessToken(server.issuer, clientCredentials);
const options = { issuer: () => server.issuer, allowInsecureIssuer: true };

await rate('cached (same token, default cache)', createTokenVerifier(options), [token]);
await rate('uncached (cache off: RS256 check every call)', createTokenVerifier({ ...options, cacheSize: 0 }), [token]);
await server.close();
