import { createRequire } from 'node:module';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import zxing from '@zxing/library';

// @zxing/library is CommonJS: its names come through the default export under Node's ESM.
const { BarcodeFormat, BinaryBitmap, DecodeHintType, HybridBinarizer, MultiFormatReader, RGBLuminanceSource } = zxing;

/**
 * Reads codes back from pictures, as a phone would: QR with jsQR, Code 128 with ZXing, and a
 * PDF page rendered to pixels with pdf.js on @napi-rs/canvas (no browser, no network).
 */
// jsqr is CommonJS with an `exports.default`: under Node's ESM the function sits one level down.
type JsQr = (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null;
const jsQR = ((jsQRModule as unknown as { default?: JsQr }).default ?? jsQRModule) as unknown as JsQr;

export interface Pixels {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

export function pngPixels(png: Buffer): Pixels {
  const image = PNG.sync.read(png);
  return { data: new Uint8ClampedArray(image.data), width: image.width, height: image.height };
}

export function decodeQr(pixels: Pixels): string | undefined {
  return jsQR(pixels.data, pixels.width, pixels.height)?.data;
}

export function decodeCode128(pixels: Pixels): string | undefined {
  // ZXing's luminance source takes one 0xAARRGGBB integer a pixel.
  const argb = new Int32Array(pixels.width * pixels.height);
  for (let i = 0; i < argb.length; i++) {
    const o = i * 4;
    argb[i] = (0xff << 24) | (pixels.data[o]! << 16) | (pixels.data[o + 1]! << 8) | pixels.data[o + 2]!;
  }
  const reader = new MultiFormatReader();
  const hints = new Map<zxing.DecodeHintType, unknown>([
    [DecodeHintType.POSSIBLE_FORMATS, [BarcodeFormat.CODE_128]],
    [DecodeHintType.TRY_HARDER, true],
  ]);
  try {
    return reader.decode(new BinaryBitmap(new HybridBinarizer(new RGBLuminanceSource(argb, pixels.width, pixels.height))), hints).getText();
  } catch {
    return undefined;
  }
}

/** Page `page` (1-based) of a PDF as pixels, at `scale` times 72 dpi. */
export async function renderPdfPage(pdf: Buffer, page = 1, scale = 3): Promise<Pixels & { png: Buffer }> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const { createCanvas } = await import('@napi-rs/canvas');
  const standardFontDataUrl = `${createRequire(import.meta.url).resolve('pdfjs-dist/package.json').replace(/package\.json$/, '')}standard_fonts/`;
  const document = await pdfjs.getDocument({ data: new Uint8Array(pdf), standardFontDataUrl, disableFontFace: true, isEvalSupported: false }).promise;
  try {
    const pdfPage = await document.getPage(page);
    const viewport = pdfPage.getViewport({ scale });
    const canvas = createCanvas(Math.ceil(viewport.width), Math.ceil(viewport.height));
    const context = canvas.getContext('2d');
    context.fillStyle = '#ffffff';
    context.fillRect(0, 0, canvas.width, canvas.height);
    await pdfPage.render({ canvas: canvas as never, canvasContext: context as never, viewport }).promise;
    const image = context.getImageData(0, 0, canvas.width, canvas.height);
    return { data: new Uint8ClampedArray(image.data), width: canvas.width, height: canvas.height, png: canvas.toBuffer('image/png') };
  } finally {
    await document.destroy();
  }
}

/** The text of page `page` (1-based) of a PDF as pdf.js reads it (what a reader shows and copies), its runs joined by `|`. */
export async function pdfPageText(pdf: Buffer, page = 1): Promise<string> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const standardFontDataUrl = `${createRequire(import.meta.url).resolve('pdfjs-dist/package.json').replace(/package\.json$/, '')}standard_fonts/`;
  const document = await pdfjs.getDocument({ data: new Uint8Array(pdf), standardFontDataUrl, disableFontFace: true, isEvalSupported: false }).promise;
  try {
    const content = await (await document.getPage(page)).getTextContent();
    return content.items.map((item) => ('str' in item ? item.str : '')).join('|');
  } finally {
    await document.destroy();
  }
}
