import fs from 'node:fs';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { code128Image, codeTokensIn, imageTag, qrImage, withEmbeddedImages } from '../../src/comms/code-images.js';
import { checkTemplate, renderTemplate } from '../../src/comms/merge-tokens.js';
import { renderPdf } from '../../src/comms/pdf.js';
import { decodeCode128, decodeQr, pngPixels, renderPdfPage } from '../support/decode-codes.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';
import { SendGridMailer } from '../../src/adapters/mailer/sendgrid.js';
import { startSendGridDouble } from '../support/sendgrid-double.js';

/** Issue 16, items 1 and 2: the code as images that scan back to exactly the guest's code. */

const signedLike = `T1.${'AZxB4HoAAT8rjB5dSk57nB0qO0xdbn8dYB8b7pZQ2X3k0TnP8jQb3xq8l6hVu1n9xv3aX7ZxGQ0jU9QmQk8J2s6tLh4bV1Nw5rR8cE3yT6uI0oP2aS4dF6g'}`;

describe('code images', () => {
  it('the QR PNG decodes to the code, a 119-character signed ticket included', async () => {
    for (const code of ['GALA-0001', signedLike]) {
      const image = await qrImage(code, 'test');
      expect(decodeQr(pngPixels(image.content))).toBe(code);
      expect(image.width).toBe(image.height);
    }
  });

  it('the Code 128 PNG decodes to the code', async () => {
    const image = await code128Image('GALA-0001', 'test');
    expect(decodeCode128(pngPixels(image.content))).toBe('GALA-0001');
  });

  it('both scan back from a PDF page rendered to pixels', async () => {
    const [qr, bars] = await Promise.all([qrImage(signedLike, 'a'), code128Image('GALA-0001', 'b')]);
    const html = `<h1>Winter Gala</h1><p>Please bring this ticket.</p>${imageTag(qr)}${imageTag(bars)}`;
    const pdf = await renderPdf(withEmbeddedImages(html, [qr, bars]), { title: 'Invitation' });
    const page = await renderPdfPage(pdf, 1, 2);
    expect(decodeQr(page)).toBe(signedLike);
    expect(decodeCode128(page)).toBe('GALA-0001');
  });
});

describe('merge tokens {{qrCode}} and {{barcodeImage}}', () => {
  it('are validated like the other tokens: fine in html, refused in the subject', () => {
    expect(checkTemplate({ html: '<p>{{qrCode}}</p>{{#if barcodeImage}}{{barcodeImage}}{{/if}}' })).toEqual([]);
    expect(checkTemplate({ subject: 'Ticket {{qrCode}}', html: '' })).toEqual([
      { path: 'subject', message: '{{qrCode}} renders an image: it is only allowed in html (line 1)' },
    ]);
    expect(checkTemplate({ html: '{{qrcode}}' })[0]!.message).toMatch(/unknown merge token "qrcode" \(did you mean "qrCode"\?\)/);
  });

  it('only tokens the template uses make images (words in the text do not)', () => {
    expect(codeTokensIn('<p>Scan the qrCode below</p>{{qrCode}}')).toEqual(['qrCode']);
    expect(codeTokensIn('<p>qrCode and barcodeImage</p>')).toEqual([]);
    expect(codeTokensIn('{{#if barcodeImage}}{{barcodeImage}}{{/if}}{{{qrCode}}}')).toEqual(['qrCode', 'barcodeImage']);
  });

  it('render a cid: image in the html and the code in words in the plain text', async () => {
    const image = await qrImage('GALA-0001', 'x@checkin');
    const rendered = renderTemplate({ html: '<p>Hello</p>{{qrCode}}<p>See you</p>' }, {}, [image]);
    expect(rendered.html).toContain('<img src="cid:qrcode.x@checkin" alt="Ticket code: GALA-0001"');
    expect(rendered.html).not.toContain('data:');
    expect(rendered.text).toBe('Hello\n\nTicket code: GALA-0001\n\nSee you');
    // Without an image (the guest has no code) the token renders nothing.
    expect(renderTemplate({ html: '<p>{{qrCode}}</p>' }, {}).html).toBe('<p></p>');
  });
});

describe('SendGrid carries the code image inline', () => {
  it('as an attachment with content_id and disposition inline (v3 mail/send), next to a plain attachment', async () => {
    const double = await startSendGridDouble();
    try {
      const image = await qrImage('GALA-0001', 'k@checkin');
      const mailer = new SendGridMailer({ apiKey: double.apiKey, baseUrl: double.url });
      await mailer.send({
        messageKey: 'k',
        from: { email: 'invites@checkin.test' },
        to: { email: 'ann@example.com' },
        subject: 'Ticket',
        html: `<p>${imageTag(image)}</p>`,
        attachments: [
          { filename: image.filename, contentType: image.contentType, content: image.content, contentId: image.cid },
          { filename: 'invitation.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF-1.4') },
        ],
      });
      const [inline, pdf] = double.accepted[0]!.body.attachments!;
      expect(inline).toMatchObject({ filename: 'ticket-qr.png', type: 'image/png', disposition: 'inline', content_id: image.cid });
      expect(decodeQr(pngPixels(Buffer.from(inline!.content, 'base64')))).toBe('GALA-0001');
      expect(pdf).toMatchObject({ disposition: 'attachment' });
      expect(pdf!.content_id).toBeUndefined();
    } finally {
      await double.close();
    }
  });
});

describe('an invitation with a scannable ticket, end to end', () => {
  let service: TestService;
  let client: Client;
  beforeAll(async () => {
    service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
    client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('the email carries the QR code inline by cid:, the PDF embeds it; both decode to the guest’s ticket, which admits at the door', async () => {
    const event = await client.call('POST', '/checkin/v1/api/event', {
      title: 'Winter Gala',
      startTime: '2026-12-12T18:00:00Z',
      endTime: '2099-12-12T23:00:00Z',
    });
    const template = await client.call('POST', '/comms/v1/api/comms/template', {
      eventId: event.body.id,
      name: 'Gala ticket',
      html: '<h1>{{eventTitle}}</h1><p>Dear {{fullName}}, please bring this ticket.</p>{{qrCode}}',
      attachPdf: true,
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    const guest = await client.call('POST', '/checkin/v1/api/guest', {
      eventId: event.body.id,
      firstName: 'Ann',
      lastName: 'Lee',
      email: 'ann@example.com',
      commsTemplateId: template.body.id,
    });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);
    const ticket = (await client.call('GET', `/checkin/v1/api/guest/${guest.body.id}/ticket`)).body;

    const outbox = path.join(service.dataDir, 'outbox');
    // Hang guard only: a PDF render on a loaded machine took 12 s.
    const file = await eventually(async () => (fs.existsSync(outbox) ? fs.readdirSync(outbox).find((f) => f.endsWith('.eml')) : undefined), 60_000, 'the invitation email');
    const raw = fs.readFileSync(path.join(outbox, file));
    // keepCidLinks: mailparser would otherwise swap cid: references for data: URLs itself.
    const mail = await simpleParser(raw, { keepCidLinks: true });
    expect(raw.toString('latin1')).toMatch(/Content-Type: multipart\/related/i);
    const inline = mail.attachments.find((a) => a.contentType === 'image/png');
    expect(inline).toBeDefined();
    expect(inline!.contentDisposition).toBe('inline');
    expect(mail.html).toContain(`src="cid:${inline!.cid}"`);
    expect(mail.html).not.toContain('data:image');
    expect(mail.text).toContain(`Ticket code: ${ticket.code}`);

    const fromEmail = decodeQr(pngPixels(inline!.content));
    expect(fromEmail).toBe(ticket.code);
    const pdf = mail.attachments.find((a) => a.contentType === 'application/pdf');
    const page = await renderPdfPage(pdf!.content, 1, 2);
    expect(decodeQr(page)).toBe(ticket.code);

    const scan = await client.call('POST', `/checkin/v1/api/guests/${event.body.id}/checkin`, { barcode: fromEmail });
    expect(scan.body).toMatchObject({ result: 'admitted', guest: { id: guest.body.id } });
  });
});
