import { Piscina } from 'piscina';

/**
 * Renders invitation PDFs on worker threads (piscina): a render is synchronous CPU work of
 * tens to hundreds of milliseconds, which on the main thread would stall everything else the
 * process serves (scans at the door, when all roles run in one process).
 */
export interface PdfRenderer {
  render(html: string, options: { title: string }): Promise<Buffer>;
  close(): Promise<void>;
}

export function createPdfRenderer(options: { threads: number }): PdfRenderer {
  // Under tsx (npm start, tests) the task is TypeScript: the threads load it through tsx too.
  const fromSource = import.meta.url.endsWith('.ts');
  const pool = new Piscina({
    filename: new URL(fromSource ? './pdf-task.ts' : './pdf-task.js', import.meta.url).href,
    minThreads: 0,
    maxThreads: options.threads,
    idleTimeout: 60_000,
    ...(fromSource ? { execArgv: ['--import', 'tsx'] } : {}),
  });
  return {
    render: async (html, { title }) => Buffer.from((await pool.run({ html, title })) as Uint8Array),
    close: () => pool.close(),
  };
}
