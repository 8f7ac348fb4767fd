import { spawn } from 'node:child_process';
import { createClient, startTestService, type Client, type TestService } from '../../test/support/service.js';
import { onOtherCores } from '../support.js';

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

/** An invitation's html as the sends benches render it: the guest's values and some 1 kB of text. */
export const invitationHtml = `<h1>{{eventTitle}}</h1><p>Dear {{fullName}}, your code is <b>{{barcode}}</b>.</p>${'<p>Programme: talks, dinner and music until late.</p>'.repeat(20)}`;

/**
 * `doorWithGuests` whose client sends invitations through the real `@sendgrid/mail` client to the
 * SendGrid double, and has comms.sent delivered to a webhook receiver; both run in a process of
 * their own (remote-doubles.ts), as they are remote in production. WORKERS_THREAD passes through.
 * `stop` closes the service and ends that process.
 */
export async function doorSendingInvitations(guests: number): Promise<Awaited<ReturnType<typeof doorWithGuests>> & { stop(): Promise<void> }> {
  const doubles = spawn(...onOtherCores(process.execPath, ['--import', 'tsx', new URL('./remote-doubles.ts', import.meta.url).pathname]), { stdio: ['pipe', 'pipe', 'inherit'] });
  const remote = await new Promise<{ sendgridUrl: string; apiKey: string; hookUrl: string }>((resolve) => doubles.stdout!.once('data', (line) => resolve(JSON.parse(String(line)))));
  const door = await doorWithGuests(guests, {
    env: {
      WEBHOOK_ALLOW_INSECURE: 'true',
      SENDGRID_API_KEY: remote.apiKey,
      SENDGRID_BASE_URL: remote.sendgridUrl,
      SEND_CONCURRENCY: '8',
      WORKERS_THREAD: process.env.WORKERS_THREAD ?? 'off',
    },
    access: { commsApiEnabled: true, senderTrusted: true },
  });
  await door.client.call('POST', '/comms/v1/api/comms/webhook', { url: remote.hookUrl });
  return {
    ...door,
    stop: async () => {
      await door.service.close();
      doubles.kill();
    },
  };
}
