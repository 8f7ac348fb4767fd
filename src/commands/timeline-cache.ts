/**
 * Answers of the timeline route kept as JSON bytes (docs/analytics.md, "Kept answers").
 *
 * An answer depends only on the event's timeline documents, its time zone and the query, and
 * every event the timeline projection applies to an event raises that event's head position
 * (`timeline_heads`, written in the same batch as the minutes). So an answer kept with the head
 * position it was built at is exact for as long as the head has not moved: a request reads the
 * head (one small document), and builds the answer again only after a new scan of that event.
 *
 * The head is read before the minutes: an answer is then never older than the position it is
 * kept under (a scan landing in between makes it newer, and the next request, seeing the new
 * head, builds again). Events without a head document (projected before heads existed, until
 * their next scan or a rebuild) are built on every request, as before.
 *
 * The same head means the same minutes only while the projection's code is the same: a rebuild
 * by another process after a change to it (`npm run projections -- rebuild timeline`) ends at
 * the same heads with different minutes. So an answer is also kept at most KEEP_MS.
 */
import { LRUCache } from 'lru-cache';
import type { ReadStore } from '../adapters/readstore/port.js';
import { TIMELINE_HEADS_COLLECTION, type TimelineHeadDoc } from '../projections/timeline.js';
import { SerializedJson } from '../shared/serialized-json.js';
import { exactKey } from '../shared/ids.js';

/** Bytes of answers kept per read store; the least recently used go first. */
const MAX_BYTES = 32 * 1024 * 1024;
/** A larger answer (thousands of 1-minute buckets split by many devices) is built each time. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;
/** Longest an answer is kept while its event's head stays put. */
const KEEP_MS = 60_000;

interface Kept {
  position: number;
  answer: SerializedJson;
}

class TimelineAnswers {
  private readonly kept = new LRUCache<string, Kept>({
    maxSize: MAX_BYTES,
    maxEntrySize: MAX_ANSWER_BYTES,
    sizeCalculation: (entry) => entry.answer.bytes.length,
    ttl: KEEP_MS,
  });
  /** Answers being built, so requests that arrive together after a scan build one. */
  private readonly building = new Map<string, Promise<SerializedJson>>();

  async answer(readStore: ReadStore, clientId: string, eventId: string, key: string, build: () => Promise<unknown>): Promise<SerializedJson> {
    const head = await readStore.collection<TimelineHeadDoc>(TIMELINE_HEADS_COLLECTION).get(exactKey(clientId, eventId));
    if (!head) {
      // The heads are gone (a rebuild has just dropped them): nothing kept can be trusted.
      this.kept.delete(key);
      return SerializedJson.of(await build());
    }
    const kept = this.kept.get(key);
    if (kept && kept.position === head.position) return kept.answer;
    const pendingKey = `${key}\u0000${head.position}`;
    let pending = this.building.get(pendingKey);
    if (!pending) {
      pending = build().then((value) => {
        const answer = SerializedJson.of(value);
        this.kept.set(key, { position: head.position, answer });
        return answer;
      });
      this.building.set(pendingKey, pending);
      void pending.then(
        () => this.building.delete(pendingKey),
        () => this.building.delete(pendingKey),
      );
    }
    return pending;
  }
}

const answersByStore = new WeakMap<ReadStore, TimelineAnswers>();

/** The kept answer for `key` if the event's timeline has not moved since, else `build()` (then kept). */
export function cachedTimeline(readStore: ReadStore, clientId: string, eventId: string, key: string, build: () => Promise<unknown>): Promise<SerializedJson> {
  let answers = answersByStore.get(readStore);
  if (!answers) answersByStore.set(readStore, (answers = new TimelineAnswers()));
  return answers.answer(readStore, clientId, eventId, key, build);
}
