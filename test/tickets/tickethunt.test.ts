import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeImages, qrImage } from '../../src/comms/code-images.js';
import { renderPdf } from '../../src/comms/pdf.js';
import { decodeCode128, decodeQr, pdfPageText, pngPixels, renderPdfPage } from '../support/decode-codes.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { newTicketEvent } from '../support/tickets.js';

/**
 * The ticket as a guest's phone, a printer and a door scanner see it (branch tickethunt): the
 * invitation PDF prints the guest's name as written, whatever its script.
 */

const page = (name: string, extra = '') => `<html><body><h1>Dear ${name}</h1><p>Welcome, ${name}.</p>${extra}</body></html>`;

describe('the invitation PDF prints names in any script as written, never as other letters', () => {
  it('Central European, Cyrillic, Greek and Vietnamese names read back exactly as the guest wrote them', async () => {
    for (const name of ['Łukasz Żółć', 'Иван Петров', 'Αλέξανδρος Παπαδόπουλος', 'Nguyễn Văn Anh', 'Dvořák Šťastný', 'Zoë Café']) {
      const text = await pdfPageText(await renderPdf(page(name), { title: 't' }));
      expect(text, name).toContain(`Dear ${name}`);
      expect(text, name).toContain(`Welcome, ${name}.`);
    }
  });

  it('a name written with combining accents (e + U+0301, as macOS writes it) prints as the accented letter', async () => {
    const text = await pdfPageText(await renderPdf(page('Rene\u0301e Zoe\u0308'), { title: 't' }));
    expect(text).toContain('Dear Renée Zoë');
  });

  it('a name in a script the font lacks (CJK, Arabic, Hebrew, emoji) prints no letters that are not in it', async () => {
    for (const name of ['王小明', 'محمد', 'שלום', '😀']) {
      const text = await pdfPageText(await renderPdf(page(name), { title: 't' }));
      // Before: PDFKit wrote the UTF-16 code units as Latin-1 bytes: 王 (U+738B) printed as `s‹`, ש as `^•`.
      expect(text.replace(/Dear|Welcome|[\s,.|!\u0000]/g, ''), name).toBe('');
    }
  });

  it('the ticket QR code still scans from the page of a guest with a Cyrillic and a CJK name', { timeout: 60_000 }, async () => {
    const code = 'T1.AZxB4HoAAT8rjB5dSk57nB0qAZxB4HoAAT8rjB5dSk57nB0qAZxB4HoAAT8rjB5dSk57nB0qAZxB4HoAAT8rjB5dSk57nB0qAZxB4HoAAT8rjB5d';
    const image = await qrImage(code, 't');
    const img = `<img src="data:image/png;base64,${image.content.toString('base64')}" width="${image.width}" height="${image.height}">`;
    const pdf = await renderPdf(page('Иван 王小明', img), { title: 't' });
    expect(decodeQr(await renderPdfPage(pdf))).toBe(code);
  });
});

describe('an image in the template that cannot be read does not cost the guest its ticket', () => {
  it('a truncated or corrupt PNG or JPEG is left out of the PDF; the rest of the page and the ticket QR code print', { timeout: 60_000 }, async () => {
    const code = 'GALA-0001';
    const qr = await qrImage(code, 't');
    const png = qr.content.toString('base64');
    const broken = [
      `data:image/png;base64,${qr.content.subarray(0, 40).toString('base64')}`, // a PNG cut short
      'data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHR', // a JPEG cut short
    ];
    for (const src of broken) {
      const html = `<p>Logo:</p><img src="${src}"><p>Your ticket, Ann:</p><img src="data:image/png;base64,${png}" width="${qr.width}" height="${qr.height}">`;
      const pdf = await renderPdf(html, { title: 't' });
      expect(await pdfPageText(pdf)).toMatch(/Logo:.*Your ticket, Ann:/);
      expect(decodeQr(await renderPdfPage(pdf))).toBe(code);
    }
  });
});

describe('a guest whose barcode changed after its invitation went out (regression guard; documented in docs/tickets.md)', () => {
  let service: TestService;
  let alice: Client;
  beforeAll(async () => {
    service = await startTestService();
    alice = await createClient(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  it('the code read off the old invitation is refused at the door (not_found); the new one admits and is what the sync and GET …/ticket show', async () => {
    const eventId = await newTicketEvent(alice);
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', customId: 'CRM-9', barcode: 'gala-0001 ' });
    expect(created.status).toBe(200);
    const [qr, bars] = await codeImages('gala-0001 ', ['qrCode', 'barcodeImage'], 'old');
    const fromQr = decodeQr(pngPixels(qr!.content))!;
    const fromBars = decodeCode128(pngPixels(bars!.content))!;
    expect([fromQr, fromBars]).toEqual(['gala-0001 ', 'gala-0001 ']);
    const upsert = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'CRM-9', barcode: 'GALA-0002' }]);
    expect(upsert.status).toBe(204);
    for (const old of [fromQr, fromBars, 'GALA-0001']) {
      expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: old })).body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    }
    expect((await alice.call('GET', `/checkin/v1/api/guest/${created.body.id}/ticket`)).body).toMatchObject({ kind: 'barcode', code: 'GALA-0002' });
    const sync = await alice.call('GET', `/checkin/v1/api/event/${eventId}/tickets?limit=1000`);
    expect(sync.body.items).toEqual([expect.objectContaining({ guestId: created.body.id, kind: 'barcode', code: 'GALA-0002' })]);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'GALA-0002' })).body).toMatchObject({ result: 'admitted', guest: { id: created.body.id } });
  });
});
