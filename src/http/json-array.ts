import type { Response } from 'express';

/** Bytes gathered before a write: few syscalls, and memory bounded whatever the item count. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Sends the items of `batches` (each written as `json` gives it) as one JSON array, written as
 * they come with backpressure: a response of 100,000 objects never exists as one string. An
 * answer that fits in one chunk (a few hundred guests) is sent whole with its Content-Length, in
 * one write. Items come in batches (a read store's `batches`): one await per batch, not per item.
 *
 * Until the first chunk is written nothing is sent, so an error while reading the items is
 * answered like any other error. Once the first chunk is out the status is sent, so an error
 * after that can only end the connection (the client sees a truncated array). A client that
 * goes away mid-answer stops the reading (the items' iterator is closed); that is not an error.
 *
 * Written by hand rather than through `stream.pipeline(Readable.from(...))`, which cost more
 * per request than a few hundred guests' JSON (issue 13 goal 3: a stream, a generator and an
 * abort controller per answer, and an AbortError built when each pipeline ends).
 */
export async function sendJsonArray<T>(
  res: Response,
  batches: AsyncIterable<readonly T[]>,
  json: (item: T) => string = (item) => JSON.stringify(item),
  status = 200,
): Promise<void> {
  const iterator = batches[Symbol.asyncIterator]();
  let buffer = '[';
  let first = true;
  let started = false;
  let gone = false;
  // One 'drain' listener for the whole answer, added at the first wait: with compression on,
  // `res.on('drain')` lands on the compression stream, where `res.off` cannot reach it, so a
  // listener per wait would pile up there.
  let wake: (() => void) | undefined;
  let listening = false;
  const onDrain = () => wake?.();
  const onClose = () => {
    gone = true;
    wake?.();
  };
  res.once('close', onClose);
  /** Resolves when the response can take more, or is closed ('drain' never comes to a closed one). */
  const drainedOrClosed = () => {
    if (!listening) res.on('drain', onDrain);
    listening = true;
    return new Promise<void>((resolve) => (wake = resolve));
  };
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      for (const item of next.value) {
        if (gone) return;
        buffer += (first ? '' : ',') + json(item);
        first = false;
        if (buffer.length < CHUNK_BYTES) continue;
        if (!started) {
          res.status(status).type('application/json');
          started = true;
        }
        const flushed = res.write(buffer);
        buffer = '';
        if (!flushed && !gone) {
          await drainedOrClosed();
          wake = undefined;
        }
      }
    }
    if (gone) return;
    // Nothing written yet: the whole answer goes in one write, which Node sends with its Content-Length.
    if (!started) res.status(status).type('application/json');
    res.end(`${buffer}]`);
  } catch (error) {
    // Part of the array is out: end the connection so the client sees it cut short (the error
    // handler only logs an error whose answer has begun).
    if (started) res.destroy();
    throw error;
  } finally {
    res.off('close', onClose);
    if (listening) res.off('drain', onDrain);
    if (gone) await iterator.return?.();
  }
}
