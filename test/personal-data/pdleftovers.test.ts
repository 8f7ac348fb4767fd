/**
 * Personal data left over (docs/personal-data.md): the log lines of an email that could not be
 * built hold no guest's values, whatever the failing library quoted; a removed team member's user
 * name is not answered about its scans, nor kept in the scans and statistics documents.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, newEvent, passwordToken, request, startTestService, type TestService } from '../support/service.js';
import { commsSetup, until } from '../support/flows.js';
import { loggedLines } from '../support/log-lines.js';

// A library that quotes what it was given: the PDF renderer quotes the merged html, the code image
// the guest's barcode. Real ones may (pdfmake names an image it cannot read; an encoder the data).
vi.mock('../../src/comms/pdf-pool.js', () => ({
  createPdfRenderer: () => ({
    render: async (html: string) => {
      throw new Error(`cannot lay out ${JSON.stringify(html)}`);
    },
    close: async () => {},
  }),
}));
vi.mock('../../src/comms/code-images.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/comms/code-images.js')>();
  return {
    ...original,
    codeImages: async (code: string | undefined, ...rest: Parameters<typeof original.codeImages> extends [unknown, ...infer R] ? R : never) => {
      if (code?.startsWith('TOO-LONG')) throw new Error(`cannot encode ${JSON.stringify(code)} as a symbol`);
      return original.codeImages(code, ...rest);
    },
  };
});

let service: TestService;
const { logger, lines } = loggedLines('info');
beforeAll(async () => {
  service = await startTestService({}, { logger });
});
afterAll(() => service.close());

const tag = randomUUID().slice(0, 8);
const retried = (line: Record<string, unknown>) => typeof line.msg === 'string' && line.msg.startsWith('invitation send (recording it) failed');

/** Creates the guest, asks for its invitation by `template`, and waits for the send to fail (or for the queue to log a retry). */
async function failedSend(html: string, attachPdf: boolean, guest: Record<string, string>) {
  const setup = await commsSetup(service);
  const template = await setup.client.call('POST', '/comms/v1/api/comms/template', { eventId: setup.eventId, name: 'Failing', subject: 'Hello', html, attachPdf });
  expect(template.status, JSON.stringify(template.body)).toBe(200);
  const created = await setup.client.call('POST', '/checkin/v1/api/guest', { eventId: setup.eventId, ...guest });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const sent = await setup.client.call('POST', '/comms/v1/api/comms/send', { templateId: template.body.id, attendeeIds: [created.body.id] });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const id = sent.body.invitations[0].attendeeInvitationId as string;
  const failed = () => lines.find((line) => line.msg === 'invitation send failed' && line.invitationId === id);
  await until(async () => (failed() || lines.some((line) => retried(line) && line.id === id) ? true : undefined), 'the send failed');
  return { id, failed: failed() };
}

function expectNoValueLogged(guest: Record<string, string>) {
  const log = JSON.stringify(lines);
  for (const value of Object.values(guest)) expect(log, value).not.toContain(value);
}

describe('an email that could not be built is logged without the guest', () => {
  it('a PDF that fails quoting the merged html: render_failed, and the log line has no name, email or additionalInfo', async () => {
    const guest = { firstName: `Zebulon${tag}`, lastName: `Quaxley${tag}`, email: `zeb.${tag}@guest.example`, additionalInfo: `seat ${tag}-row` };
    const { id, failed } = await failedSend('<p>Dear {{fullName}} ({{email}}), {{additionalInfo}}</p>', true, guest);
    expect(failed).toMatchObject({ code: 'render_failed' });
    const built = lines.find((line) => line.msg === 'the invitation email could not be built' && line.invitationId === id);
    expect(JSON.stringify(built)).toContain('cannot lay out');
    expect(JSON.stringify(built)).toContain('[Redacted]');
    expectNoValueLogged(guest);
  });

  it('a code image that fails quoting the barcode: render_failed at once (before, retried every 5 s and logged whole each time)', async () => {
    const guest = { firstName: `Yolanda${tag}`, lastName: `Vexhall${tag}`, email: `yola.${tag}@guest.example`, barcode: `TOO-LONG-${tag}` };
    const { id, failed } = await failedSend('<p>{{barcodeImage}}</p>', false, guest);
    expect(lines.filter(retried)).toEqual([]);
    expect(failed).toMatchObject({ code: 'render_failed' });
    const built = lines.find((line) => line.msg === 'the invitation email could not be built' && line.invitationId === id);
    expect(JSON.stringify(built)).toContain('cannot encode');
    expectNoValueLogged(guest);
  });
});

describe('a removed team member’s user name leaves the answers about its scans', () => {
  const api = '/checkin/v1/api';
  const doorPassword = 'north gate scanner 7';

  it('team statistics, the scans list, a guest’s history and its personal-data answer keep the id and say [erased], also after an annulment and a rebuild', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const id = `door-${tag}`;
    const userName = `dora.${tag}@staff.example`;
    const created = await client.call('POST', `${api}/teammember`, { id, userName, email: `mail.${tag}@staff.example`, password: doorPassword });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const token = await passwordToken(service.url, userName, doorPassword);
    const door = (method: string, pathname: string, body?: unknown) =>
      request(service.url, method, pathname, body, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey });
    const guests: string[] = [];
    for (const firstName of ['Ada', 'Bea']) {
      const guest = await client.call('POST', `${api}/guest`, { eventId, firstName });
      guests.push(guest.body.id);
      expect((await door('POST', `${api}/guests/${eventId}/checkin`, { guestId: guest.body.id })).body.result).toBe('admitted');
    }
    // The client's own scan keeps its name.
    const own = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Cy' });
    expect((await client.call('POST', `${api}/guests/${eventId}/checkin`, { guestId: own.body.id })).body.result).toBe('admitted');
    const before = await client.call('GET', `${api}/team/event/${eventId}`);
    expect(before.body).toEqual(expect.arrayContaining([expect.objectContaining({ teamMemberId: id, username: userName, checkedIn: 2 })]));

    expect((await client.call('DELETE', `${api}/teammember/${id}`)).status).toBe(204);
    // An annulment after the removal names the removed scanner: it must not write the name back.
    const undone = await client.call('POST', `${api}/guests/${eventId}/checkin/undo`, { guestId: guests[1] });
    expect(undone.status, JSON.stringify(undone.body)).toBe(200);

    const answers = async () => {
      const stats = await client.call('GET', `${api}/team/event/${eventId}`);
      const scans = await client.call('GET', `${api}/event/${eventId}/scans`);
      const history = await client.call('GET', `${api}/guest/${guests[0]}/history`);
      const personal = await client.call('GET', `${api}/guest/${guests[0]}/personal-data`);
      for (const reply of [stats, scans, history, personal]) expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      return { stats: stats.body, scans: scans.body, history: history.body, personal: personal.body };
    };
    const check = async (when: string) => {
      const { stats, scans, history, personal } = await answers();
      expect(stats, when).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ teamMemberId: id, username: '[erased]', checkedIn: 1 }),
          expect.objectContaining({ teamMemberId: client.id, username: client.email, checkedIn: 1 }),
        ]),
      );
      const byMember = scans.items.filter((scan: { scannedBy: { id: string } }) => scan.scannedBy.id === id);
      expect(byMember, when).toHaveLength(2);
      for (const scan of byMember) expect(scan.scannedBy, when).toEqual({ id, username: '[erased]' });
      expect(scans.items.find((scan: { scannedBy: { id: string } }) => scan.scannedBy.id === client.id).scannedBy.username).toBe(client.email);
      expect(history.events.find((e: { type: string }) => e.type === 'GuestAdmitted').data.scannedBy, when).toEqual({ id, username: '[erased]' });
      expect(personal.scans[0].scannedBy, when).toEqual({ id, username: '[erased]' });
      for (const answer of [stats, scans, history, personal]) expect(JSON.stringify(answer), when).not.toContain(userName);
    };
    await check('after the removal');
    // The stored documents too (the events keep the name: a rebuild writes it back, the answers still say [erased]).
    const stored = [];
    for (const name of ['scans', 'team_stats']) {
      for await (const doc of service.platform.readStore.collection(name).stream({ clientId: client.id, eventId }, { readOnly: true })) stored.push(doc);
    }
    expect(stored.length).toBeGreaterThan(3);
    expect(JSON.stringify(stored)).not.toContain(userName);
    await service.runner!.rebuild([]);
    await check('after a rebuild');

    // Registered again under its id (a new password): its scans are its own again, under its name.
    expect((await client.call('POST', `${api}/teammember`, { id, userName, email: `mail.${tag}@staff.example`, password: 'a brand new door passphrase' })).status).toBe(200);
    const { stats, scans } = await answers();
    expect(stats).toEqual(expect.arrayContaining([expect.objectContaining({ teamMemberId: id, username: userName })]));
    expect(scans.items.filter((scan: { scannedBy: { id: string } }) => scan.scannedBy.id === id).map((scan: { scannedBy: unknown }) => scan.scannedBy)).toEqual([
      { id, username: userName },
      { id, username: userName },
    ]);
  });
});
