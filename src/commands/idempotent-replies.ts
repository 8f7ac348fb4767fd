import type { Doc } from '../adapters/readstore/port.js';
import type { Services } from './services.js';

/** A stored reply of an idempotent request (src/http/middleware/idempotency.ts), as erasure reads it. */
interface StoredReply extends Doc {
  status?: number;
  body?: string;
  bodyEncoding?: 'utf8' | 'base64';
}

/** What a rewrite decides for one reply: its new JSON answer, `drop` (the key is released), or nothing (kept as is). */
export type ReplyRewrite = { answer: unknown } | 'drop' | undefined;

/**
 * Rewrites the client's stored idempotent replies (kept 24 h) in place: `rewrite` sees each reply's
 * status, its text and its JSON answer (`undefined` when the text is not JSON) and says what becomes
 * of it. Used by the erasure of a guest and the removal of a team member, so that a retry inside the
 * key's lifetime answers without the erased values (docs/personal-data.md).
 */
export async function rewriteIdempotentReplies(
  services: Services,
  clientId: string,
  rewrite: (reply: { status: number; text: string; answer: unknown }) => ReplyRewrite,
): Promise<void> {
  const replies = services.readStore.collection<StoredReply>('idempotency_keys');
  const ownKeys = `^${clientId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:`;
  const rewritten: { _id: string; body: string }[] = [];
  const dropped: string[] = [];
  for await (const reply of replies.stream({ _id: { $regex: ownKeys }, body: { $exists: true } }, { readOnly: true })) {
    if (typeof reply.body !== 'string') continue;
    const text = reply.bodyEncoding === 'base64' ? Buffer.from(reply.body, 'base64').toString('utf8') : reply.body;
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      answer = undefined;
    }
    const decision = rewrite({ status: reply.status ?? 200, text, answer });
    if (decision === 'drop') dropped.push(reply._id);
    else if (decision) rewritten.push({ _id: reply._id, body: JSON.stringify(decision.answer) });
  }
  for (const { _id, body } of rewritten) await replies.updateOne(_id, { $set: { body, bodyEncoding: 'utf8' } });
  for (const id of dropped) await replies.deleteOne(id);
}
