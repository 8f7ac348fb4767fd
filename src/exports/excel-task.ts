import type { MessagePort } from 'node:worker_threads';
import type { Column, ColumnKind } from './columns.js';
import { writeExcelInProcess, type SummaryValue } from './excel.js';

/** A column as it crosses to the thread: its values come computed, one array per row. */
export interface ColumnShape {
  name: string;
  kind: ColumnKind;
  width: number;
}

/** What the main thread sends on the task's port (see excel.ts, writeExcel). */
export type ExcelMessage = { rows: unknown[][] } | { end: true; summary: [label: string, value: SummaryValue][] };

export interface ExcelTask {
  file: string;
  sheetName?: string;
  columns: ColumnShape[];
  timeZone: string;
  port: MessagePort;
}

/**
 * One Excel export on a pool thread (issue 13, goal 6): the rows arrive on `port` in chunks,
 * each acknowledged with 'more' once written (so at most a few chunks wait in memory), then
 * `end` with the summary sheet. Resolves with the number of rows written.
 */
export default async function writeOnThread(task: ExcelTask): Promise<number> {
  let summary: [string, SummaryValue][] = [];
  const columns: Column<unknown[]>[] = task.columns.map((shape, i) => ({ ...shape, value: (row) => row[i] as string | number | boolean | undefined }));
  try {
    return await writeExcelInProcess(rowsFrom(task.port, (s) => (summary = s)), task.file, {
      columns,
      timeZone: task.timeZone,
      ...(task.sheetName ? { sheetName: task.sheetName } : {}),
      summary: () => summary,
    });
  } finally {
    task.port.close();
  }
}

/** The rows sent on `port`, chunk by chunk, asking for the next chunk as each is taken. */
async function* rowsFrom(port: MessagePort, onSummary: (summary: [string, SummaryValue][]) => void): AsyncGenerator<unknown[]> {
  const queue: ExcelMessage[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  port.on('message', (message: ExcelMessage) => {
    queue.push(message);
    wake?.();
  });
  // The main thread closes its end when reading the rows failed: stop, do not wait forever.
  port.on('close', () => {
    closed = true;
    wake?.();
  });
  for (;;) {
    while (queue.length === 0) {
      if (closed) throw new Error('the export was cancelled while its rows were being sent');
      await new Promise<void>((resolve) => (wake = resolve));
    }
    const message = queue.shift()!;
    if ('end' in message) {
      onSummary(message.summary);
      return;
    }
    yield* message.rows;
    port.postMessage('more');
  }
}
