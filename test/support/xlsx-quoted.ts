/**
 * The cells of an xlsx sheet marked `quotePrefix` (text that stays text, also when edited): exceljs
 * reads no such style, so the workbook's XML is read here.
 */
import JSZip from 'jszip';

/** References (`B3`) of the cells of sheet `sheetNumber` (1-based) whose style has quotePrefix="1". */
export async function quotePrefixedCells(xlsx: Buffer | Uint8Array, sheetNumber = 1): Promise<string[]> {
  const zip = await JSZip.loadAsync(xlsx);
  const styles = await zip.file('xl/styles.xml')!.async('string');
  const cellXfs = /<cellXfs[^>]*>([\s\S]*?)<\/cellXfs>/.exec(styles)?.[1] ?? '';
  const quoted = new Set([...cellXfs.matchAll(/<xf\b[^>]*?\/?>/g)].flatMap((xf, index) => (/quotePrefix="(1|true)"/.test(xf[0]) ? [String(index)] : [])));
  const sheet = await zip.file(`xl/worksheets/sheet${sheetNumber}.xml`)!.async('string');
  return [...sheet.matchAll(/<c r="([A-Z]+\d+)" s="(\d+)"/g)].filter((cell) => quoted.has(cell[2]!)).map((cell) => cell[1]!);
}
