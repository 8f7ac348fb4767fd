import { createClient, startTestService, type Client, type TestService } from '../../test/support/service.js';

/**
 * The door the scan profiles measure: a service on the embedded default (SQLITE_SYNCHRONOUS=FULL,
 * load shedding off as in every test service), one event, `guests` guests imported in batches of
 * 200 with barcodes BC-0…, and one scan body per guest (the body of guest i at index i). `env`
 * adds to the service's settings, `access` to its client's.
 */
export async function doorWithGuests(
  guests: number,
  options: { env?: Record<string, string>; access?: Parameters<typeof createClient>[1] } = {},
): Promise<{ service: TestService; client: Client; eventId: string; headers: Record<string, string>; bodies: string[] }> {
  const service = await startTestService({
    LOG_LEVEL: 'silent',
    SQLITE_SYNCHRONOUS: 'FULL',
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
    PII_ENCRYPTION: process.env.PII_ENCRYPTION ?? 'on',
    ...options.env,
  });
  const client = await createClient(service, options.access);
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
  const eventId = event.body.id as string;
  const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
  for (let start = 0; start < guests; start += 200) {
    const batch = Array.from({ length: 200 }, (_, k) => ({ firstName: `F${start + k}`, lastName: 'L', barcode: `BC-${start + k}`, plusOnes: 1 }));
    const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, { method: 'PUT', headers, body: JSON.stringify(batch) });
    if (reply.status !== 204) throw new Error(await reply.text());
  }
  const bodies = Array.from({ length: guests }, (_, i) => JSON.stringify({ barcode: `BC-${i}`, gate: `G${i % 4}`, device: `d${i % 10}` }));
  return { service, client, eventId, headers, bodies };
}
