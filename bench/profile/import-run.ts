/**
 * The import the profiles measure (import-profile.ts, import-alloc.ts): a service at FULL with an
 * event, and its guests sent through PUT /guests/{eventId}/upsert in batches of 200, one at a time.
 */
import { createClient, startTestService, type TestService } from '../../test/support/service.js';

export const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);

/** The service (PII_ENCRYPTION from the environment, on by default) and `importGuests`, which returns its seconds. */
export async function importService(): Promise<{ service: TestService; importGuests: () => Promise<number> }> {
  const service = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL', OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0', PII_ENCRYPTION: process.env.PII_ENCRYPTION ?? 'on' });
  const client = await createClient(service);
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
  const eventId = event.body.id as string;
  const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
  const importGuests = async (): Promise<number> => {
    const started = process.hrtime.bigint();
    for (let start = 0; start < GUESTS; start += 200) {
      const batch = Array.from({ length: 200 }, (_, k) => {
        const i = start + k;
        return { firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `BC-${i}`, customId: `crm-${i}`, plusOnes: i % 3, tags: 'vip', additionalInfo: 'Vegan menu' };
      });
      const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, { method: 'PUT', headers, body: JSON.stringify(batch) });
      if (reply.status !== 204) throw new Error(await reply.text());
    }
    return Number(process.hrtime.bigint() - started) / 1e9;
  };
  return { service, importGuests };
}
