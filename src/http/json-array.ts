import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';

/** Bytes gathered before a write: few syscalls, and memory bounded whatever the item count. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Sends `items` as one JSON array, written as they come with backpressure: a response of
 * 100,000 objects never exists as one string. Once the first byte is out the status is sent,
 * so an error after that can only end the connection (the client sees a truncated array).
 */
export async function sendJsonArray(res: Response, items: AsyncIterable<unknown>, status = 200): Promise<void> {
  async function* chunks(): AsyncGenerator<string> {
    let buffer = '[';
    let first = true;
    for await (const item of items) {
      buffer += (first ? '' : ',') + JSON.stringify(item);
      first = false;
      if (buffer.length >= CHUNK_BYTES) {
        yield buffer;
        buffer = '';
      }
    }
    yield `${buffer}]`;
  }
  res.status(status).type('application/json');
  await pipeline(Readable.from(chunks()), res);
}
