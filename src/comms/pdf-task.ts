import { renderPdf } from './pdf.js';

/** One PDF render on a pool thread (see pdf-pool.ts). */
export default function render(task: { html: string; title: string }): Promise<Buffer> {
  return renderPdf(task.html, { title: task.title });
}
