/**
 * Personal data left over (docs/personal-data.md): the log lines of an email that could not be
 * built hold no guest's values, whatever the failing library quoted.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';
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
