import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type TestService } from '../support/service.js';

/** README, Configuration: HOST takes an IPv6 address (`::` for every interface) as well as IPv4 and host names. */
// A host without IPv6 cannot listen on ::1 at all (EADDRNOTAVAIL): skipped there, saying so.
const ipv6Loopback = Object.values(os.networkInterfaces()).some((addresses) => addresses?.some((a) => a.address === '::1'));

describe('HOST as an IPv6 address', () => {
  let service: TestService | undefined;
  afterAll(async () => service?.close());

  it.skipIf(!ipv6Loopback)('serves the API with the dev provider on an IPv6 HOST and no PUBLIC_URL (needs ::1 on this host)', async () => {
    // Before, the dev issuer was http://:::<port>/core: every request with a bearer token got 503 identity_provider_unavailable.
    service = await startTestService({ HOST: '::1' });
    expect(service.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
    const client = await createClient(service);
    const events = await client.call('GET', '/checkin/v1/api/events');
    expect(events.status).toBe(200);
  }, 120_000);
});
