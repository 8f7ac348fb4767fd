import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { Keyring } from '../shared/encryption.js';
import { reencryptTicketKey, type ReencryptOutcome } from '../tickets/event-keys.js';
import { eventsToHead } from './events-to-head.js';
import type { CommandContext } from './handle-command.js';
import type { Services } from './services.js';
import { reencryptWebhookSecret } from './webhooks.js';

/**
 * The secrets keyring's rotation (WEBHOOK_ENCRYPTION_KEYS, docs/webhooks.md): every stored
 * webhook signing secret and every event's current ticket signing key, encrypted again under
 * the keyring's current key, so the old key can be removed. Each is one event on its own
 * stream, written only when what it re-encrypts is still what is stored: the command can be
 * stopped and run again (it skips what is under the current key already), and a rotation by
 * an account meanwhile is not undone. A secret under a key the keyring does not hold is listed
 * by that key id, not skipped in silence.
 */
export interface ReencryptProgress {
  /** Webhooks and events found so far, and what came of them. */
  webhookSecrets: Tally;
  ticketKeys: Tally;
  position: number;
  head: number;
}

interface Tally {
  reencrypted: number;
  alreadyCurrent: number;
}

export interface ReencryptResult {
  currentKeyId: string;
  webhookSecrets: Tally;
  ticketKeys: Tally;
  /** Key ids that stored secrets still need and the keyring lacks, with how many of each kind. */
  missingKeys: { keyId: string; webhookSecrets: number; ticketKeys: number }[];
  /** Secrets that did not decrypt although their key id is in the keyring (a different key under that id). */
  failed: { stream: string; error: string }[];
}

export async function reencryptSecrets(
  services: Services,
  keyring: Keyring,
  context: CommandContext,
  options: { onProgress?: (progress: ReencryptProgress) => void; pageSize?: number } = {},
): Promise<ReencryptResult> {
  const progress: ReencryptProgress = {
    webhookSecrets: { reencrypted: 0, alreadyCurrent: 0 },
    ticketKeys: { reencrypted: 0, alreadyCurrent: 0 },
    position: -1,
    head: -1,
  };
  const missing = new Map<string, { keyId: string; webhookSecrets: number; ticketKeys: number }>();
  const failed: ReencryptResult['failed'] = [];
  const seen = new Set<string>();
  const withKeyring = { ...services, secretsKeyring: keyring };
  const filter = { eventTypes: ['WebhookConfigured', 'TicketKeyCreated'] };
  for await (const page of eventsToHead(services.eventStore, filter, options.pageSize)) {
    progress.head = page.head;
    for (const event of page.events as StoredEvent<string, { clientId: string; eventId?: string }>[]) {
      if (seen.has(event.streamName)) continue;
      seen.add(event.streamName);
      const kind = event.type === 'WebhookConfigured' ? 'webhookSecrets' : 'ticketKeys';
      const { clientId, eventId } = event.data;
      let outcome: ReencryptOutcome;
      try {
        outcome = kind === 'webhookSecrets'
          ? await reencryptWebhookSecret(withKeyring, keyring, { ...context, tenantId: clientId }, clientId)
          : await reencryptTicketKey(withKeyring, { ...context, tenantId: clientId }, clientId, eventId!);
      } catch (error) {
        failed.push({ stream: event.streamName, error: (error as Error).message });
        continue;
      }
      if (outcome === 'reencrypted') progress[kind].reencrypted++;
      else if (outcome === 'current') progress[kind].alreadyCurrent++;
      else if (outcome !== 'none') {
        const entry = missing.get(outcome.missingKeyId) ?? { keyId: outcome.missingKeyId, webhookSecrets: 0, ticketKeys: 0 };
        entry[kind]++;
        missing.set(outcome.missingKeyId, entry);
      }
    }
    progress.position = page.position;
    options.onProgress?.({ ...progress, webhookSecrets: { ...progress.webhookSecrets }, ticketKeys: { ...progress.ticketKeys } });
  }
  return {
    currentKeyId: keyring.currentKeyId,
    webhookSecrets: progress.webhookSecrets,
    ticketKeys: progress.ticketKeys,
    missingKeys: [...missing.values()],
    failed,
  };
}
