import type { EventDoc } from '../commands/events.js';
import type { AccountDoc } from '../projections/accounts.js';
import { eraseGuests, type PersonalDataSettings } from '../commands/personal-data.js';
import type { GuestDoc } from '../projections/guests.js';
import type { Services } from '../commands/services.js';
import { newId } from '../shared/ids.js';
import type { Worker } from './worker.js';

const DAY_MS = 86_400_000;

/**
 * Issue 14, item 3 (storage limitation): erases the guests of every event whose `retentionDays`
 * (the event's own, else its client's default) have passed since its endTime. Runs every `sweepMs`; `runOnce(now)` is the whole job, so a
 * test drives it with its own clock. Erasure is idempotent: several workers may run it.
 */
export class RetentionWorker implements Worker {
  readonly name = 'retention';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly services: Services,
    private readonly settings: PersonalDataSettings,
    private readonly sweepMs: number,
  ) {}

  async start(): Promise<void> {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.runOnce(this.services.clock.now())
        .catch((error: unknown) => this.services.logger.error({ err: error }, 'retention sweep failed; it runs again at the next interval'))
        .finally(() => (this.running = undefined));
    }, this.sweepMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /**
   * Erases what is due at `now`; returns how many guests it erased. An event's own
   * `retentionDays` wins; an event without one uses its client's default (PUT user), if any.
   */
  async runOnce(now: Date): Promise<number> {
    const { readStore } = this.services;
    const defaults = new Map<string, number>();
    for await (const account of readStore.collection<AccountDoc>('accounts').stream({ retentionDays: { $exists: true } }, { readOnly: true })) {
      if (typeof account.retentionDays === 'number') defaults.set(account._id, account.retentionDays);
    }
    const due: { event: EventDoc; days: number; source: 'event' | 'client default' }[] = [];
    for await (const event of readStore.collection<EventDoc>('events').stream({}, { readOnly: true })) {
      const days = event.retentionDays ?? defaults.get(event.clientId);
      if (days === undefined) continue;
      if (Date.parse(event.endTime) + days * DAY_MS <= now.getTime()) {
        due.push({ event, days, source: event.retentionDays !== undefined ? 'event' : 'client default' });
      }
    }
    let erased = 0;
    for (const { event, days, source } of due) {
      const left = await readStore.collection<GuestDoc>('guests').count({ clientId: event.clientId, eventId: event.eventId, erased: { $ne: true } });
      if (left === 0) continue;
      const requestId = newId();
      const result = await eraseGuests(
        this.services,
        this.settings,
        { tenantId: event.clientId, actor: { type: 'system', id: 'retention' }, correlationId: requestId, requestId, now },
        event.eventId,
        { all: true, reason: `retention: ${days} days after the event ended${source === 'client default' ? " (the client's default)" : ''}` },
      );
      erased += result.erased;
      this.services.logger.info({ clientId: event.clientId, eventId: event.eventId, erased: result.erased }, 'retention: guests erased');
    }
    return erased;
  }
}
