/**
 * Personal data where nobody looks: every line the service process writes (stdout and stderr, at
 * LOG_LEVEL=trace), its /metrics text, and the answer headers, after a realistic day on the
 * embedded default: guests with distinctive names, emails, barcodes, additionalInfo, customIds and
 * images; invitations through SendGrid (a double) that are sent, refused quoting the address,
 * bounced and dropped; webhook deliveries that fail; bad guest input; a door scan of a blocked
 * guest; a sign-in with a wrong password; a team member created; lookups by email and by info;
 * an erasure. Each personal value and each secret is then searched for in all of it
 * (docs/personal-data.md, "What the logs hold").
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnService, type ChildService } from '../support/child-service.js';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';
import { adminKey, createClient, request, type Client, type Reply } from '../support/service.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { until } from '../support/flows.js';
import { deadLetterMessage } from '../../src/adapters/bus/delivery.js';
import { toMessage } from '../../src/workers/event-message.js';
import { guestStream } from '../../src/domain/guest.js';
import { customIdStream, legacyCustomIdStream, streamNameForLogs, usernameStream } from '../../src/domain/reservation.js';
import { withoutValues } from '../../src/workers/send-worker.js';

const comms = '/comms/v1/api/comms';
const tag = randomBytes(4).toString('hex');
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const masterKey = randomBytes(32).toString('base64url');
const metricsToken = `metrics-token-${randomBytes(12).toString('hex')}`;

/** The guests' personal values, each distinctive enough that a hit anywhere is this test's. */
const ann = {
  firstName: `Zebulonia${tag}`,
  lastName: `Quackenbottom${tag}`,
  email: `zeb.quack.${tag}@example.com`,
  barcode: `BCQ${tag}77`,
  additionalInfo: `AddInfoPeanutAllergy${tag}`,
  customId: `CRM${tag}cust`,
  image: randomBytes(48).toString('base64'),
  blockReason: `Banned${tag} after the gala`,
};
const refused = { firstName: `Refusia${tag}`, email: `refused.${tag}@example.com`, barcode: `BCR${tag}11` };
const bounced = { firstName: `Bouncia${tag}`, email: `bounced.${tag}@example.com`, barcode: `BCB${tag}22` };
const dropped = { firstName: `Droppia${tag}`, email: `dropped.${tag}@example.com`, barcode: `BCD${tag}33` };
/** A guest whose additionalInfo, merged into a template's link, makes the link unsafe: the send is refused spam_check_failed. */
const linked = { firstName: `Linkia${tag}`, email: `linked.${tag}@example.com`, additionalInfo: `javascript:alert('Linkinfo${tag}')` };
const badInput = { firstName: `Invalidia${tag}`, email: `not-an-address-${tag}@@example` };
const member = { userName: `doorstaff${tag}`, password: `MemberPass-${tag}-secret`, email: `member.${tag}@example.com`, firstName: `Memberia${tag}` };
const gatewaySession = `gw-session-${tag}-cookie`;
const proxyLogin = Buffer.from(`gateway:proxy-pass-${tag}`).toString('base64');
const wrongPassword = `WrongPass-${tag}-guess`;

let sendgrid: SendGridDouble;
let service: ChildService;
let receiver: Receiver;
let client: Client;
const replies: Reply[] = [];

/** Everything the process wrote: each stdout line as written (JSON), then stderr. */
const everything = () => `${service.logs.map((line) => JSON.stringify(line)).join('\n')}\n${service.stderr}`;

/** The lines (stdout, then stderr as one) that hold `value`, in any case, JSON-escaped or not. */
function linesHolding(value: string): string[] {
  const needle = value.toLowerCase();
  const hits = service.logs.map((line) => JSON.stringify(line)).filter((line) => line.toLowerCase().includes(needle));
  if (service.stderr.toLowerCase().includes(needle)) hits.push(`stderr: ${service.stderr.slice(0, 500)}`);
  return hits.map((line) => line.slice(0, 600));
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const reply = await client.call(method, path, body, headers);
  replies.push(reply);
  return reply;
}

async function invitationOf(guestId: string, done: (item: Record<string, unknown>) => boolean) {
  // Hang guard only, far above any real figure.
  return until(async () => {
    const [item] = (await call('GET', `${comms}/invitations?attendeeId=${guestId}`)).body.items ?? [];
    return item && done(item) ? (item as Record<string, unknown>) : undefined;
  }, `invitation of ${guestId}`, 60_000);
}

describe('a realistic day, then every line the process wrote', () => {
  beforeAll(async () => {
    sendgrid = await startSendGridDouble();
    receiver = await startReceiver({ fallback: 500 });
    service = await spawnService({
      LOG_LEVEL: 'trace',
      SENDGRID_API_KEY: sendgrid.apiKey,
      SENDGRID_BASE_URL: sendgrid.url,
      SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      PII_MASTER_KEYS: `k1:${masterKey}`,
      METRICS_TOKEN: metricsToken,
      WEBHOOK_ALLOW_INSECURE: 'true',
      SEND_RETRY_DELAYS_MS: '50,50',
    });
  }, 120_000);

  afterAll(async () => {
    if (service) {
      service.kill('SIGTERM');
      await service.exited;
    }
    await receiver?.close();
    await sendgrid?.close();
  });

  it('holds no guest’s personal value, no password, token or secret; neither do /metrics and the answer headers', async () => {
    client = await createClient(service as { url: string }, { commsApiEnabled: true, senderTrusted: true });
    const webhook = await call('POST', `${comms}/webhook`, { url: receiver.url });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(200);
    const webhookSecret = webhook.body.secret as string;
    const event = await call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
    const eventId = event.body.id as string;
    const template = await call('POST', `${comms}/template`, { eventId, name: 'Pass', subject: 'Welcome {{firstName}}', html: '<p>Dear {{fullName}}, your code {{barcode}}</p>' });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    const commsTemplateId = template.body.id as string;

    // Ann: sent. Refused: SendGrid refuses it for good, quoting the address.
    const annGuest = await call('POST', '/checkin/v1/api/guest', { eventId, ...ann, blockReason: undefined, commsTemplateId });
    expect(annGuest.status, JSON.stringify(annGuest.body)).toBe(200);
    await invitationOf(annGuest.body.id, (i) => i.status === 'sent');
    sendgrid.failNext(400, `The to address ${refused.email} is invalid (${refused.firstName})`);
    const refusedGuest = await call('POST', '/checkin/v1/api/guest', { eventId, ...refused, commsTemplateId });
    await invitationOf(refusedGuest.body.id, (i) => i.status === 'failed');

    // Bounced and dropped: sent, then SendGrid's Event Webhook reports them, its reasons quoting the address.
    const reported: string[] = [];
    for (const [guest, report] of [
      [bounced, { event: 'bounce', type: 'bounce', reason: `550 5.1.1 <${bounced.email}>: User unknown`, status: '5.1.1' }],
      [dropped, { event: 'dropped', reason: `Bounced Address ${dropped.email}` }],
    ] as const) {
      const created = await call('POST', '/checkin/v1/api/guest', { eventId, ...guest, commsTemplateId });
      const invitation = await invitationOf(created.body.id, (i) => i.status === 'sent');
      const posted = await postSendGridEvents(service.url!, privateKey, [
        { email: guest.email, timestamp: Math.floor(Date.now() / 1000), sg_event_id: `e-${randomUUID()}`, attendeeInvitationId: invitation.attendeeInvitationId, ...report },
      ]);
      expect(posted.status).toBe(200);
      reported.push(created.body.id);
    }
    for (const id of reported) await invitationOf(id, (i) => ['bounced', 'dropped'].includes(String(i.providerStatus)));

    // A link merged from the guest's own data that the link check refuses.
    const linkTemplate = await call('POST', `${comms}/template`, { eventId, name: 'Profile', subject: 'Your profile', html: '<p><a href="{{additionalInfo}}">Your profile</a></p>' });
    expect(linkTemplate.status, JSON.stringify(linkTemplate.body)).toBe(200);
    const linkedGuest = await call('POST', '/checkin/v1/api/guest', { eventId, ...linked, commsTemplateId: linkTemplate.body.id });
    const linkedInvitation = await invitationOf(linkedGuest.body.id, (i) => i.status === 'failed');
    expect(linkedInvitation.error).toMatch(/spam_check_failed/);

    // Bad input: the caller's own 400 may quote it; the log may not.
    const bad = await call('POST', '/checkin/v1/api/guest', { eventId, ...badInput, plusOnes: `${badInput.firstName} and two` });
    expect(bad.status, JSON.stringify(bad.body)).toBe(400);
    // A body that is not JSON: the parser's message quotes the text around the fault.
    const malformed = await call('POST', '/checkin/v1/api/guest', `{"eventId":"${eventId}","firstName":"${badInput.firstName}","email":${badInput.email}}`, { 'content-type': 'application/json' });
    expect(malformed.status, JSON.stringify(malformed.body)).toBe(400);

    // Lookups that carry personal data in the URL.
    // Through a gateway that forwards the browser's session cookie and its own proxy login.
    expect((await call('GET', `/checkin/v1/api/guests/${eventId}/byinfo?additionalInfo=${encodeURIComponent(ann.additionalInfo)}`, undefined, { cookie: `session=${gatewaySession}`, 'proxy-authorization': `Basic ${proxyLogin}` })).status).toBe(200);
    expect((await call('GET', `/checkin/v1/api/guests/${eventId}?q=${encodeURIComponent(ann.lastName)}`)).status).toBe(200);
    expect((await call('GET', `/checkin/v1/api/guest/${encodeURIComponent(ann.customId)}`)).status).toBe(200);
    await call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(client.email)}`);
    await call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(ann.email)}`);

    // The door: Ann blocked with a reason naming her, then scanned.
    const blocked = await call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [annGuest.body.id], reason: ann.blockReason });
    expect(blocked.status, JSON.stringify(blocked.body)).toBe(200);
    const scan = await call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: ann.barcode });
    expect(JSON.stringify(scan.body), "a rejected scan").toMatch(/block/i);
    // A scan of a barcode nobody holds (the lookup is the scanned value).
    await call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: `${ann.barcode}X` });

    // A team member, then a sign-in with a wrong password and one with the right one.
    const created = await call('POST', '/checkin/v1/api/teammember', member);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const wrong = await request(service.url!, 'POST', '/core/connect/token', new URLSearchParams({ grant_type: 'password', client_id: 'checkin-app', username: member.userName, password: wrongPassword }).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(wrong.status).toBe(400);
    const right = await request(service.url!, 'POST', '/core/connect/token', new URLSearchParams({ grant_type: 'password', client_id: 'checkin-app', username: member.userName, password: member.password }).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(right.status, JSON.stringify(right.body)).toBe(200);
    const memberToken = right.body.access_token as string;
    await request(service.url!, 'GET', `/checkin/v1/api/event/${eventId}`, undefined, { authorization: `Bearer ${memberToken}`, 'ocp-apim-subscription-key': client.subscriptionKey });
    expect((await call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(member.userName)}/events`)).status).toBe(200);

    // Failing webhook deliveries: at least a few attempts answered 500.
    await receiver.waitFor(3, 60_000);

    // The erasure of Ann and of the bounced guest.
    for (const id of [annGuest.body.id, reported[0]]) {
      const erased = await call('POST', `/checkin/v1/api/guest/${id}/erase`, { reason: 'art. 17 request' });
      expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    }

    const metrics = await request(service.url!, 'GET', '/metrics', undefined, { authorization: `Bearer ${metricsToken}` });
    expect(metrics.status).toBe(200);
    // Let the asynchronous log lines of the last requests arrive.
    await until(async () => (service.logs.some((l) => l.msg === 'request completed' && String((l.req as { url?: string })?.url).startsWith('/metrics')) || service.logs.filter((l) => String((l.req as { url?: string })?.url ?? '').includes('/erase')).length >= 2 ? true : undefined), 'last request lines', 30_000);

    const personal: Record<string, string> = {
      'guest first name': ann.firstName,
      'guest last name': ann.lastName,
      'guest email': ann.email,
      'guest barcode': ann.barcode,
      'guest additionalInfo': ann.additionalInfo,
      'guest customId': ann.customId,
      'guest image': ann.image.slice(8, 40),
      'block reason': ann.blockReason,
      'refused guest email': refused.email,
      'refused guest name': refused.firstName,
      'refused guest barcode': refused.barcode,
      'bounced guest email': bounced.email,
      'bounced guest name': bounced.firstName,
      'dropped guest email': dropped.email,
      'linked guest additionalInfo': `Linkinfo${tag}`,
      'bad input name': badInput.firstName,
      'bad input email': badInput.email,
      'team member password': member.password,
      'team member user name': member.userName,
      'team member email': member.email,
      'team member first name': member.firstName,
      'wrong password': wrongPassword,
      'account password': client.password,
      'account email': client.email,
      'client secret': client.clientSecret,
      'subscription key': client.subscriptionKey,
      'client access token': client.token,
      'team member access token': memberToken,
      'webhook secret': webhookSecret,
      'SendGrid API key': sendgrid.apiKey,
      'master key': masterKey,
      'metrics token': metricsToken,
      'admin API key': adminKey,
      'gateway session cookie': gatewaySession,
      'proxy login': proxyLogin,
    };
    const logged = Object.fromEntries(Object.entries(personal).map(([what, value]) => [what, linesHolding(value)]).filter(([, hits]) => hits.length > 0));
    expect(logged).toEqual({});
    // The scenario did log: the request lines, the sends, the failures, the webhook attempts, the erasures.
    const text = everything();
    for (const msg of ['request completed', 'invitation send failed', 'webhook attempt', 'invitation sent']) expect(text).toContain(`"msg":"${msg}"`);

    const inMetrics = Object.entries(personal).filter(([, value]) => metrics.body.toLowerCase().includes(value.toLowerCase())).map(([what]) => what);
    expect(inMetrics).toEqual([]);
    // Answer headers name no personal value (bodies to their owner may: that is the API).
    const headerText = replies.map((r) => JSON.stringify([...r.headers])).join('\n').toLowerCase();
    const inHeaders = Object.entries(personal).filter(([, value]) => headerText.includes(value.toLowerCase())).map(([what]) => what);
    expect(inHeaders).toEqual([]);
  }, 240_000);
});

describe('the Kafka mode’s message keys and headers (built the same for the embedded bus)', () => {
  const clientId = randomUUID();
  const guestId = randomUUID();
  const event = {
    id: randomUUID(),
    type: 'InvitationRequested',
    streamName: guestStream(clientId, guestId),
    revision: 1,
    position: 42,
    recordedAt: '2026-12-07T10:00:00.000Z',
    data: { attendeeInvitationId: randomUUID(), personalData: { keyId: `${clientId}:${guestId}`, alg: 'A256GCM', ciphertext: 'c2VhbGVk' } },
    metadata: { tenantId: clientId, requestId: 'req-1', traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
  };

  it('key a relayed event by its stream, which names ids only, and carry ids, type, position and the trace in headers', () => {
    const message = toMessage(event as never);
    expect(message.key).toBe(`guest-${clientId}:${guestId}`);
    expect(Object.keys(message.headers ?? {}).sort()).toEqual(['event-id', 'event-position', 'event-type', 'request-id', 'tenant-id', 'traceparent']);
    expect(JSON.stringify(message.headers)).not.toMatch(/@|ciphertext/);
  });

  it('a dead letter’s x-dlq-error keeps no email address of the handler’s error', () => {
    const message = { ...toMessage(event as never), topic: 'comms.invitations.v1', partition: 0, offset: '7', attempt: 5, headers: toMessage(event as never).headers ?? {} };
    const dead = deadLetterMessage(message, new Error(`550 5.1.1 <${ann.email}>: Recipient address rejected`), 5);
    expect(dead.headers?.['x-dlq-error']).toBe('550 5.1.1 <[Redacted]>: Recipient address rejected');
    expect(dead.key).toBe(message.key);
  });
});

describe('what a log line shows of a stream name and of a text quoting a guest', () => {
  it('a user-name stream and a legacy customId stream show no name; a hashed customId stream and a guest stream stay', () => {
    expect(streamNameForLogs(usernameStream(ann.email))).toBe('username-[Redacted]');
    const legacy = legacyCustomIdStream('client-1', 'event-1', ann.customId);
    expect(streamNameForLogs(legacy)).toBe('guestcustomid-client-1:event-1:[Redacted]');
    const hashed = customIdStream('client-1', 'event-1', ann.customId, { id: 'k1', key: Buffer.alloc(32, 1) });
    expect(streamNameForLogs(hashed)).toBe(hashed);
    expect(streamNameForLogs(guestStream('client-1', ann.customId))).toBe(guestStream('client-1', ann.customId));
  });

  it('withoutValues redacts a guest’s value as written, in another case and percent-encoded; short values stay', () => {
    const info = 'peanut allergy, table 4';
    const text = `spam_check_failed: https://blocked.test/p?i=${encodeURIComponent(info)}: blocked domain; ${info.toUpperCase()}; Al`;
    expect(withoutValues(text, [info, 'Al'])).toBe('spam_check_failed: https://blocked.test/p?i=[Redacted]: blocked domain; [Redacted]; Al');
  });
});
