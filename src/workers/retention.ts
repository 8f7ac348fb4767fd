import type { EventDoc } from '../commands/events.js';
import type { AccountDoc } from '../projections/accounts.js';
import { eraseGuests, type PersonalDataSettings } from '../commands/personal-data.js';
import type { GuestDoc } from '../projections/guests.js';
import type { Services } from '../commands/services.js';
import { removeOutboxMessagesBefore } from '../adapters/mailer/outbox.js';
import { newId } from '../shared/ids.js';
import { chooseZone, offsetAt, wallTimeToInstant } from '../shared/time-zones.js';
import type { Worker } from './worker.js';

const DAY_MS = 86_400_000;
/** More than any zone's offset moves between two instants (Samoa skipped a whole day in 2011). */
const MARGIN_MS = 2 * DAY_MS;

/**
 * When the guests of an event that ended at `endTime` are due: `days` calendar days later at the
 * same time on the event's clock (`timeZone`, IANA), so "30 days after the event ended" is what
 * its organizer reads on its calendar also across a daylight-saving change. A time the clocks
 * skip that day is read with the offset before the change, one they show twice is the first.
 */
export function retentionDueAt(endTime: string, days: number, timeZone: string): number {
  const end = Date.parse(endTime);
  if (timeZone === 'UTC') return end + days * DAY_MS;
  const wall = end + offsetAt(new Date(end), timeZone) + days * DAY_MS;
  return wallTimeToInstant(wall, timeZone);
}

/**
 * Issue 14, item 3 (storage limitation): erases the guests of every event whose `retentionDays`
 * (the event's own, else its client's default) have passed since its endTime, counted in calendar
 * days on the event's clock (its zone, else the account's, else UTC: the exports' and timeline's rule). Runs every `sweepMs`; `runOnce(now)` is the whole job, so a
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
    /** The embedded mailer's folder and OUTBOX_RETENTION_DAYS (0: kept for ever); absent when another mailer sends. */
    private readonly outbox?: { dir: string; days: number },
  ) {}

  async start(): Promise<void> {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      const now = this.services.clock.now();
      this.running = this.runOnce(now)
        .then(() => this.pruneOutbox(now))
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

  /** Removes the outbox's emails older than OUTBOX_RETENTION_DAYS at `now`; returns how many. */
  async pruneOutbox(now: Date): Promise<number> {
    if (!this.outbox || this.outbox.days === 0) return 0;
    const removed = await removeOutboxMessagesBefore(this.outbox.dir, now.getTime() - this.outbox.days * DAY_MS);
    if (removed > 0) this.services.logger.info({ removed, retentionDays: this.outbox.days }, 'retention: outbox emails removed');
    return removed;
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
    const accountZones = new Map<string, string | undefined>();
    const accountZone = async (clientId: string): Promise<string | undefined> => {
      if (!accountZones.has(clientId)) {
        const account = await readStore.collection<AccountDoc>('accounts').get(clientId);
        accountZones.set(clientId, account?.timeZoneId ?? undefined);
      }
      return accountZones.get(clientId);
    };
    for await (const event of readStore.collection<EventDoc>('events').stream({}, { readOnly: true })) {
      const days = event.retentionDays ?? defaults.get(event.clientId);
      if (days === undefined) continue;
      const end = Date.parse(event.endTime);
      // Far from due on any clock: no zone lookup.
      if (!Number.isFinite(end) || end + days * DAY_MS - MARGIN_MS > now.getTime()) continue;
      const zone = chooseZone(event.timeZoneId, await accountZone(event.clientId));
      if (retentionDueAt(event.endTime, days, zone.name) <= now.getTime()) {
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
