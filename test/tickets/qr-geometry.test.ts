import { generateKeyPairSync } from 'node:crypto';
import jsQRModule from 'jsqr';
import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import { codeImages, imageTag, qrImage, qrQuietZoneModules, withEmbeddedImages } from '../../src/comms/code-images.js';
import { renderTemplate } from '../../src/comms/merge-tokens.js';
import { renderPdf } from '../../src/comms/pdf.js';
import { encodeTicket } from '../../src/tickets/ticket-code.js';
import { pngPixels, renderPdfPage, type Pixels } from '../support/decode-codes.js';

/**
 * Issue 16: the QR code as it is shown, measured against what phones and handheld imagers read
 * reliably (ISO/IEC 18004; docs/tickets.md "Sizes"): error correction M, a quiet zone of 4
 * modules of light around the symbol, at least 0.25 mm a module on paper, dark on light.
 */

type Point = { x: number; y: number };
type Located = { data: string; location: { topLeftCorner: Point; topRightCorner: Point; bottomLeftCorner: Point; bottomRightCorner: Point } };
type JsQr = (data: Uint8ClampedArray, width: number, height: number) => Located | null;
const jsQR = ((jsQRModule as unknown as { default?: JsQr }).default ?? jsQRModule) as unknown as JsQr;

const { privateKey } = generateKeyPairSync('ed25519');
const ticket = encodeTicket({ guestId: '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f', keyId: '9c41e07a', serial: 1 }, '6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b', privateKey);
const symbol = QRCode.create(ticket, { errorCorrectionLevel: 'M' });
const modules = symbol.modules.size;

const luminance = (p: Pixels, x: number, y: number): number => {
  const o = (y * p.width + x) * 4;
  return (p.data[o]! * 299 + p.data[o + 1]! * 587 + p.data[o + 2]! * 114) / 1000;
};

/** Box-filter downscale by an integer factor, as a mail client shows a PNG drawn at twice its shown size. */
function downscale(p: Pixels, factor: number): Pixels {
  const width = Math.floor(p.width / factor);
  const height = Math.floor(p.height / factor);
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 4; c++) {
        let sum = 0;
        for (let dy = 0; dy < factor; dy++) for (let dx = 0; dx < factor; dx++) sum += p.data[((y * factor + dy) * p.width + x * factor + dx) * 4 + c]!;
        data[(y * width + x) * 4 + c] = sum / (factor * factor);
      }
    }
  }
  return { data, width, height };
}

/** The symbol's outer edges (the finder patterns' outer corners) and its module size, in pixels. */
function measure(p: Pixels): { left: number; top: number; right: number; bottom: number; module: number } {
  const found = jsQR(p.data, p.width, p.height);
  expect(found?.data).toBe(ticket);
  // jsQR's corners are the symbol's outer corners.
  const { topLeftCorner: tl, topRightCorner: tr, bottomLeftCorner: bl } = found!.location;
  const module = (tr.x - tl.x) / modules;
  expect((bl.y - tl.y) / modules).toBeCloseTo(module, 0);
  return { left: tl.x, top: tl.y, right: tr.x, bottom: bl.y, module };
}

/** Every pixel of the band `width` wide around the symbol is light. */
function expectQuietZone(p: Pixels, box: ReturnType<typeof measure>, width: number): void {
  const inset = box.module / 2; // anti-aliased edges
  const x0 = Math.max(0, Math.floor(box.left - width + 1));
  const x1 = Math.min(p.width - 1, Math.ceil(box.right + width - 1));
  const y0 = Math.max(0, Math.floor(box.top - width + 1));
  const y1 = Math.min(p.height - 1, Math.ceil(box.bottom + width - 1));
  // The whole band is inside the picture (a PNG that is cut at the symbol has no quiet zone).
  expect(box.left, 'quiet zone on the left').toBeGreaterThanOrEqual(width - inset);
  expect(box.top, 'quiet zone on top').toBeGreaterThanOrEqual(width - inset);
  expect(p.width - box.right, 'quiet zone on the right').toBeGreaterThanOrEqual(width - inset);
  expect(p.height - box.bottom, 'quiet zone at the bottom').toBeGreaterThanOrEqual(width - inset);
  let darkest = 255;
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      const inside = x > box.left - inset && x < box.right + inset && y > box.top - inset && y < box.bottom + inset;
      if (!inside) darkest = Math.min(darkest, luminance(p, x, y));
    }
  }
  expect(darkest, 'no dark pixel in the quiet zone').toBeGreaterThan(200);
}

describe('the QR code of a signed ticket, measured', () => {
  it('is level M, version 7 (45 modules) for a 119-character ticket', () => {
    expect(ticket).toHaveLength(119);
    expect(symbol.errorCorrectionLevel.bit).toBe(QRCode.create('x', { errorCorrectionLevel: 'M' }).errorCorrectionLevel.bit);
    expect(symbol.version).toBe(7);
    expect(modules).toBe(45);
  });

  it('in the email: black on white, a 4-module quiet zone, 4 CSS px a module, and it reads at its shown size', async () => {
    const image = await qrImage(ticket, 'test');
    const drawn = pngPixels(image.content);
    expect(image.width).toBe((modules + 2 * qrQuietZoneModules) * 4);
    // Shown at half the drawn size (high-density screens get the full PNG).
    expect(drawn.width).toBe(image.width * 2);
    const shown = downscale(drawn, drawn.width / image.width);
    for (const p of [drawn, shown]) {
      const box = measure(p);
      expect(box.module).toBeCloseTo(p.width / (modules + 2 * qrQuietZoneModules), 0);
      expectQuietZone(p, box, qrQuietZoneModules * box.module);
    }
    expect(luminance(drawn, 0, 0)).toBe(255);
  });

  it('in the PDF: a module is at least 0.25 mm (about 1 mm), with its 4-module quiet zone clear of the text around it', async () => {
    const images = await codeImages(ticket, ['qrCode'], 'pdf@test');
    const rendered = renderTemplate(
      { html: '<h1>Winter Gala</h1><p>Please bring this ticket.</p>{{qrCode}}<p>Doors open at 18:00.</p>' },
      {},
      images,
    );
    const pdf = await renderPdf(withEmbeddedImages(rendered.html, images), { title: 'Invitation' });
    // 72 dpi: one pixel a point. A phone photographing a printout sees far more than this.
    const page = await renderPdfPage(pdf, 1, 1);
    const box = measure(page);
    const moduleMm = (box.module / 72) * 25.4;
    expect(moduleMm).toBeGreaterThanOrEqual(0.25);
    expect(moduleMm).toBeCloseTo(1.06, 1);
    expectQuietZone(page, box, qrQuietZoneModules * box.module);
    expect(imageTag(images[0]!)).toContain(`width="${images[0]!.width}"`);
  });
});
