/**
 * npm run bench -- sends: invitation emails on the embedded default (SQLite event store,
 * synchronous=FULL; embedded read store and bus), sent through the real @sendgrid/mail client to
 * the SendGrid test double on loopback, with the account's webhook receiving comms.sent.
 *
 * - burst: 2,000 guests upserted with a commsTemplateId (10 batches of 200); sends/s until the
 *   last email is handed over, and until the last comms.sent webhook arrives.
 * - ceiling: the same 2,000 messages handed to SendGridMailer directly, SEND_CONCURRENCY at a time.
 * - paced: 100 guests created one by one at 5/s (the spec's advice for batch sends); per guest,
 *   from the create call to the comms.sent webhook. Target (spec, Delivery behaviour): under 1 s.
 * - PDF: 50 sends of a template with attachPdf; the spec allows 1 to 2 s per send for rendering.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendGridMailer } from '../src/adapters/mailer/sendgrid.js';
import { startSendGridDouble } from '../test/support/sendgrid-double.js';
import { createClient, startTestService, type Client } from '../test/support/service.js';
import { fmt, percentile, record, table, until } from './support.js';

const BURST = Number(process.env.BENCH_SENDS ?? 2_000);
const PACED = 100;
const PDFS = 50;
const CONCURRENCY = 8;
const api = '/comms/v1/api/comms';
const html = `<h1>{{eventTitle}}</h1><p>Dear {{fullName}},</p><p>We are delighted to invite you on {{eventStart}}.
  Your entry code is <b>{{barcode}}</b>{{#if plusOnes}} and you may bring {{plusOnes}} guest(s){{/if}}.</p>
  <p><a href="https://tickets.example.com/t/{{attendeeId}}">Your ticket</a></p>${'<p>Programme: talks, dinner and music until late.</p>'.repeat(20)}`;

/** A webhook receiver that notes when each comms.sent arrives, by attendeeId. */
async function startReceiver() {
  const arrivals = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { attendeeId: string } };
      if (body.type === 'comms.sent' && !arrivals.has(body.data.attendeeId)) arrivals.set(body.data.attendeeId, Date.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, arrivals, close: () => new Promise((resolve) => server.close(resolve)) };
}

async function setUp(client: Client, receiverUrl: string, attachPdf: boolean) {
  await client.call('POST', `${api}/webhook`, { url: receiverUrl });
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z', timeZoneId: 'Europe/Paris' });
  const template = await client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Invitation', subject: 'Welcome {{firstName}}', html, attachPdf });
  if (template.status !== 200) throw new Error(`template: ${JSON.stringify(template.body)}`);
  return { eventId: event.body.id as string, templateId: template.body.id as string };
}

const guest = (i: number, templateId: string) => ({
  firstName: `Guest${i}`,
  lastName: 'Bench',
  email: `guest${i}@example.com`,
  barcode: `B-${i}`,
  plusOnes: i % 3,
  commsTemplateId: templateId,
});

export async function sendsBench(): Promise<void> {
  const sendgrid = await startSendGridDouble();
  const receiver = await startReceiver();
  const service = await startTestService({
    SQLITE_SYNCHRONOUS: 'FULL',
    WEBHOOK_ALLOW_INSECURE: 'true',
    SENDGRID_API_KEY: sendgrid.apiKey,
    SENDGRID_BASE_URL: sendgrid.url,
    SEND_CONCURRENCY: String(CONCURRENCY),
  });
  const sent = () => service.platform.readStore.collection('invitations').count({ status: 'sent' });
  const rows: string[][] = [];

  // Ceiling: the mailer alone, the same concurrency.
  const mailer = new SendGridMailer({ apiKey: sendgrid.apiKey, baseUrl: sendgrid.url });
  const ceilingStart = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < BURST) {
        const i = next++;
        await mailer.send({ messageKey: `c${i}`, from: { email: 'a@example.com' }, to: { email: `c${i}@example.com` }, subject: 'x', html, text: 'x' });
      }
    }),
  );
  const ceilingPerSecond = BURST / ((Date.now() - ceilingStart) / 1000);
  await mailer.close();

  // Burst through the whole pipeline.
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const burst = await setUp(client, receiver.url, false);
  const burstStart = Date.now();
  for (let start = 0; start < BURST; start += 200) {
    const batch = Array.from({ length: Math.min(200, BURST - start) }, (_, k) => guest(start + k, burst.templateId));
    const reply = await client.call('PUT', `/checkin/v1/api/guests/${burst.eventId}/upsert`, batch);
    if (reply.status !== 204) throw new Error(`upsert: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  const accepted = Date.now();
  const allSent = await until(async () => (await sent()) >= BURST, 'burst sends');
  const allHooks = await until(() => receiver.arrivals.size >= BURST, 'burst webhooks');
  const sendsPerSecond = BURST / ((allSent - burstStart) / 1000);
  console.log(`  burst: ${fmt(BURST)} emails in ${fmt((allSent - burstStart) / 1000, 1)} s`);

  // Paced at 5/s: create → comms.sent webhook.
  const paced = await setUp(client, receiver.url, false);
  const calls = new Map<string, number>();
  for (let i = 0; i < PACED; i += 1) {
    const at = Date.now();
    const reply = await client.call('POST', '/checkin/v1/api/guest', { ...guest(100_000 + i, paced.templateId), eventId: paced.eventId });
    calls.set(reply.body.id, at);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 200 - (Date.now() - at))));
  }
  await until(() => [...calls.keys()].every((id) => receiver.arrivals.has(id)), 'paced webhooks');
  const latencies = [...calls].map(([id, at]) => receiver.arrivals.get(id)! - at);

  // With a PDF attachment.
  const pdf = await setUp(client, receiver.url, true);
  const before = await sent();
  const pdfStart = Date.now();
  for (let start = 0; start < PDFS; start += 25) {
    const batch = Array.from({ length: 25 }, (_, k) => guest(200_000 + start + k, pdf.templateId));
    await client.call('PUT', `/checkin/v1/api/guests/${pdf.eventId}/upsert`, batch);
  }
  const pdfDone = await until(async () => (await sent()) >= before + PDFS, 'pdf sends');
  const pdfEach = (pdfDone - pdfStart) / PDFS;
  const withPdf = sendgrid.accepted.filter((a) => a.body.attachments?.some((f) => f.filename === 'Invitation.pdf')).length;
  if (withPdf !== PDFS) throw new Error(`expected ${PDFS} emails with a PDF, the double got ${withPdf}`);

  rows.push(
    [`ceiling: SendGridMailer alone, ${CONCURRENCY} at a time`, `${fmt(ceilingPerSecond)} emails/s`, ''],
    [`burst: ${fmt(BURST)} guests upserted with a template (requests done in ${fmt((accepted - burstStart) / 1000, 1)} s)`, `${fmt(sendsPerSecond)} emails/s; last comms.sent after ${fmt((allHooks - burstStart) / 1000, 1)} s`, ''],
    [`paced at 5/s: guest create → comms.sent webhook (${PACED} guests)`, `p50 ${fmt(percentile(latencies, 50))} ms, p99 ${fmt(percentile(latencies, 99))} ms`, 'p99 < 1,000 ms'],
    [`attachPdf: ${PDFS} sends (${CONCURRENCY} at a time)`, `${fmt(pdfEach)} ms of wall time per send`, 'spec: +1–2 s per send'],
  );
  const body = table(['measure', 'result', 'target'], rows);
  console.log(body);
  record('Invitation emails (npm run bench -- sends)', `${body}\n\nSQLite FULL fsync, embedded read store and bus, real @sendgrid/mail client against the SendGrid test double on loopback; the webhook receiver on loopback.`);
  await service.close();
  await receiver.close();
  await sendgrid.close();
}
