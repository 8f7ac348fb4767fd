/**
 * The operator's view of the bus's dead letters (`npm run admin -- dead-letters list|replay`,
 * docs/operations.md "Dead letters").
 *
 * A consumer that cannot handle a message after its retries appends a copy to `<topic>.dlq`
 * (src/adapters/bus/delivery.ts: the original key, value and headers plus `x-dlq-error`,
 * `x-dlq-attempts`, `x-dlq-source-topic`, `-partition`, `-offset`); the webhook dispatcher also
 * puts a delivery whose attempts ran out on `comms.events.v1.dlq` (with `x-webhook-id`).
 *
 * Replaying publishes a consumer's dead letter back to its source topic (its key, value and
 * headers without the `x-dlq-*` ones, plus `x-replayed-from`) and records it as replayed in
 * `<topic>.dlq.replayed` (keyed by the dead letter's id), so a second replay skips it. On the
 * embedded bus both are written in one transaction; on Kafka the replay is published first and the
 * mark after it, so a failure between the two replays that message again next time, which the
 * consumers drop as a repeat (they dedupe on the event: docs/operations.md, Dead letters).
 */
import { deadLetterTopic, type HeldMessage, type OutgoingMessage, type ReadableBus } from '../adapters/bus/port.js';
import { withoutAddresses } from '../workers/send-worker.js';
import { topics } from '../workers/topics.js';

/** The topics whose consumers dead-letter (the send worker's and the webhook dispatcher's). */
export const deadLetterSources: string[] = [topics.invitations, topics.commsEvents, topics.webhookRedeliveries];

/** Where replays of `<topic>.dlq` are recorded. */
export const replayedTopic = (topic: string): string => `${deadLetterTopic(topic)}.replayed`;

/** A dead letter's id: `<dead-letter topic>:<partition>:<offset>`. */
export const deadLetterId = (topic: string, message: Pick<HeldMessage, 'partition' | 'offset'>): string =>
  `${deadLetterTopic(topic)}:${message.partition}:${message.offset}`;

/** The source topic a `--topic` names: `comms.invitations.v1` or `comms.invitations.v1.dlq`. */
export const sourceTopicOf = (name: string): string => (name.endsWith('.dlq') ? name.slice(0, -'.dlq'.length) : name);

/** Longest error text shown (a handler's error is one line; a stack or a provider's body is cut). */
const errorChars = 500;

export interface DeadLetterView {
  id: string;
  /** consumer: a bus consumer gave up on the message; webhook-delivery: a webhook delivery ran out of attempts. */
  kind: 'consumer' | 'webhook-delivery';
  sourceTopic: string;
  sourcePartition?: number;
  sourceOffset?: string;
  key: string;
  eventId?: string;
  eventType?: string;
  tenantId?: string;
  webhookDeliveryId?: string;
  deadLetteredAt: string;
  attempts?: number;
  /** The last error, email addresses as `[Redacted]`, cut to 500 characters. */
  error: string;
  valueBytes: number;
  replayedAt?: string;
  /** Why `replay` leaves it alone, when it does. */
  notReplayable?: string;
}

/** What may be shown of a dead letter: ids, names, counts and the error; never its value (sealed personal fields) nor other headers. */
function view(topic: string, message: HeldMessage, replayedAt: string | undefined): DeadLetterView {
  const h = message.headers;
  const webhookDeliveryId = h['x-webhook-id'];
  const error = withoutAddresses(h['x-dlq-error'] ?? '');
  const out: DeadLetterView = {
    id: deadLetterId(topic, message),
    kind: webhookDeliveryId ? 'webhook-delivery' : 'consumer',
    sourceTopic: h['x-dlq-source-topic'] ?? topic,
    ...(h['x-dlq-source-partition'] !== undefined ? { sourcePartition: Number(h['x-dlq-source-partition']) } : {}),
    ...(h['x-dlq-source-offset'] !== undefined ? { sourceOffset: h['x-dlq-source-offset'] } : {}),
    key: message.key,
    ...(h['event-id'] ? { eventId: h['event-id'] } : {}),
    ...(h['event-type'] ? { eventType: h['event-type'] } : {}),
    ...(h['tenant-id'] ? { tenantId: h['tenant-id'] } : {}),
    ...(webhookDeliveryId ? { webhookDeliveryId } : {}),
    deadLetteredAt: message.timestamp,
    ...(h['x-dlq-attempts'] !== undefined ? { attempts: Number(h['x-dlq-attempts']) } : {}),
    error: error.length > errorChars ? `${error.slice(0, errorChars)}…` : error,
    valueBytes: Buffer.byteLength(message.value, 'utf8'),
    ...(replayedAt ? { replayedAt } : {}),
  };
  const reason = notReplayable(message);
  return reason ? { ...out, notReplayable: reason } : out;
}

function notReplayable(message: HeldMessage): string | undefined {
  if (message.headers['x-webhook-id']) {
    return 'a webhook delivery whose attempts ran out: the dispatcher would not deliver it again from the bus; redeliver it with POST /comms/v1/api/comms/webhook/deliveries/{webhookDeliveryId}/redeliver (docs/webhooks.md)';
  }
  if (message.value === '' && message.headers['x-data-omitted'] !== undefined) {
    return `dead-lettered without its value (too large for the bus): the message is at ${message.headers['x-dlq-source-topic']} partition ${message.headers['x-dlq-source-partition']} offset ${message.headers['x-dlq-source-offset']} while the topic keeps it`;
  }
  return undefined;
}

/** Replay marks of a topic: dead-letter id to when it was replayed. */
async function replayMarks(bus: ReadableBus, topic: string): Promise<Map<string, string>> {
  const marks = new Map<string, string>();
  for (const mark of await bus.readTopic(replayedTopic(topic))) {
    if (!marks.has(mark.key)) marks.set(mark.key, (JSON.parse(mark.value) as { replayedAt?: string }).replayedAt ?? mark.timestamp);
  }
  return marks;
}

export interface TopicDeadLetters {
  topic: string;
  deadLetterTopic: string;
  /** Dead letters the topic holds (retention may have removed older ones). */
  held: number;
  replayed: number;
  /** Held and not replayed. */
  waiting: number;
  /** The newest `limit` dead letters, oldest first. */
  deadLetters: DeadLetterView[];
  /** How many older ones `limit` left out. */
  omitted: number;
}

async function readDeadLetters(bus: ReadableBus, topic: string) {
  const [held, marks] = await Promise.all([bus.readTopic(deadLetterTopic(topic)), replayMarks(bus, topic)]);
  held.sort((a, b) => a.timestamp.localeCompare(b.timestamp) || a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  return held.map((message) => ({ message, view: view(topic, message, marks.get(deadLetterId(topic, message))) }));
}

export async function listDeadLetters(bus: ReadableBus, options: { topics: string[]; limit: number }): Promise<{ bus: string; topics: TopicDeadLetters[] }> {
  const result: TopicDeadLetters[] = [];
  for (const topic of options.topics) {
    const letters = await readDeadLetters(bus, topic);
    const replayed = letters.filter((l) => l.view.replayedAt).length;
    const shown = options.limit > 0 ? letters.slice(-options.limit) : [];
    result.push({
      topic,
      deadLetterTopic: deadLetterTopic(topic),
      held: letters.length,
      replayed,
      waiting: letters.length - replayed,
      deadLetters: shown.map((l) => l.view),
      omitted: letters.length - shown.length,
    });
  }
  return { bus: bus.kind, topics: result };
}

export interface ReplayProgress {
  topic: string;
  done: number;
  of: number;
}

export interface ReplaySummary {
  bus: string;
  dryRun: boolean;
  /** Published back to their source topic (with --dry-run: would be). */
  replayed: string[];
  /** Chosen but replayed before: left alone. */
  alreadyReplayed: string[];
  /** Chosen but not replayable, with why. */
  skipped: { id: string; reason: string }[];
}

/** The message a dead letter's replay publishes: as the consumer first got it, plus where it was replayed from. */
function replayMessage(id: string, message: HeldMessage): OutgoingMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) if (!name.startsWith('x-dlq-')) headers[name] = value;
  return { key: message.key, value: message.value, headers: { ...headers, 'x-replayed-from': id } };
}

/**
 * Publishes the chosen dead letters (`ids`, else every one of `topics`) back to their source topic,
 * one at a time, each with its mark (see the file comment). Ids that are not held are refused before
 * anything is published.
 */
export async function replayDeadLetters(
  bus: ReadableBus,
  options: { topics: string[]; ids?: string[]; dryRun?: boolean; onProgress?: (progress: ReplayProgress) => void; now?: () => Date },
): Promise<ReplaySummary> {
  const now = options.now ?? (() => new Date());
  const wanted = options.ids ? new Set(options.ids) : undefined;
  const chosen: { topic: string; letters: Awaited<ReturnType<typeof readDeadLetters>> }[] = [];
  const found = new Set<string>();
  for (const topic of options.topics) {
    const letters = (await readDeadLetters(bus, topic)).filter((l) => !wanted || wanted.has(l.view.id));
    for (const l of letters) found.add(l.view.id);
    chosen.push({ topic, letters });
  }
  const missing = [...(wanted ?? [])].filter((id) => !found.has(id));
  if (missing.length > 0) {
    throw new Error(
      `no dead letter ${missing.join(', ')} is held on this bus (${bus.kind}); npm run admin -- dead-letters list shows the ids. Nothing was replayed`,
    );
  }
  const summary: ReplaySummary = { bus: bus.kind, dryRun: options.dryRun ?? false, replayed: [], alreadyReplayed: [], skipped: [] };
  for (const { topic, letters } of chosen) {
    let done = 0;
    for (const { message, view: letter } of letters) {
      done += 1;
      if (letter.replayedAt) summary.alreadyReplayed.push(letter.id);
      else if (letter.notReplayable) summary.skipped.push({ id: letter.id, reason: letter.notReplayable });
      else {
        if (!options.dryRun) {
          const mark: OutgoingMessage = {
            key: letter.id,
            value: JSON.stringify({ replayedAt: now().toISOString(), to: letter.sourceTopic }),
          };
          await bus.publishAll([
            { topic: letter.sourceTopic, messages: [replayMessage(letter.id, message)] },
            { topic: replayedTopic(topic), messages: [mark] },
          ]);
        }
        summary.replayed.push(letter.id);
      }
      if (done % 100 === 0 || done === letters.length) options.onProgress?.({ topic, done, of: letters.length });
    }
  }
  return summary;
}
