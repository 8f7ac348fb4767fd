import type { Logger } from '../shared/logger.js';

interface Queued {
  id: string;
  account: string;
  /** Epoch ms when the job is due. */
  dueAt: number;
}

interface Account {
  id: string;
  /** Waiting jobs, earliest due first. */
  queue: Queued[];
  running: number;
}

export interface FairQueueOptions {
  /** Jobs running at once, in all and per account (a slow account holds only its own). */
  concurrency: number;
  perAccountConcurrency: number;
  /** Runs one job. A rejection is logged and the job runs again after `retryAfterErrorMs`. */
  run: (id: string, account: string) => Promise<void>;
  logger: Logger;
  /** What a job is, for the log line of a failed run ("webhook attempt", "invitation send"). */
  what: string;
  retryAfterErrorMs?: number;
}

/**
 * An in-memory queue of jobs due at given times (webhook attempts, invitation sends), run
 * off the bus consumer's path. Accounts take turns (round robin) and each has its own cap,
 * so one account's backlog or hanging peer delays only that account. A job is queued or
 * running at most once: enqueuing it again keeps the earlier due time, and a request that
 * comes while it runs makes it run once more afterwards.
 */
export class FairQueue {
  private readonly accounts = new Map<string, Account>();
  private readonly queued = new Map<string, Queued>();
  /** Running jobs, with the due time of a request for another run that came meanwhile. */
  private readonly running = new Map<string, { rerunAt?: number }>();
  private readonly tasks = new Set<Promise<void>>();
  private inFlight = 0;
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  private stopped = false;

  constructor(private readonly options: FairQueueOptions) {}

  /** Run this job at `dueAt` (epoch ms), unless an earlier run is already queued. */
  enqueue(id: string, accountId: string, dueAt: number): void {
    if (this.stopped) return;
    const running = this.running.get(id);
    if (running) {
      running.rerunAt = Math.min(running.rerunAt ?? Infinity, dueAt);
      return;
    }
    const existing = this.queued.get(id);
    const account = this.accountOf(accountId);
    if (existing) {
      if (existing.dueAt <= dueAt) return;
      account.queue.splice(account.queue.indexOf(existing), 1);
    }
    const entry: Queued = { id, account: accountId, dueAt };
    this.queued.set(id, entry);
    account.queue.splice(insertionIndex(account.queue, dueAt), 0, entry);
    this.pump();
  }

  /** Takes no more jobs and waits for the running ones to settle. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.tasks]);
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Jobs queued or running. */
  get backlog(): number {
    return this.queued.size + this.running.size;
  }

  private accountOf(accountId: string): Account {
    let account = this.accounts.get(accountId);
    if (!account) {
      account = { id: accountId, queue: [], running: 0 };
      this.accounts.set(accountId, account);
    }
    return account;
  }

  /** Starts every due job the limits allow, one account at a time in turn, then sets the timer. */
  private pump(): void {
    if (this.stopped) return;
    const { concurrency, perAccountConcurrency } = this.options;
    const now = Date.now();
    let started = true;
    while (started && this.inFlight < concurrency) {
      started = false;
      for (const account of [...this.accounts.values()]) {
        if (this.inFlight >= concurrency) break;
        const head = account.queue[0];
        if (!head || head.dueAt > now || account.running >= perAccountConcurrency) continue;
        account.queue.shift();
        this.queued.delete(head.id);
        this.start(account, head.id);
        // Served accounts go to the back of the line.
        this.accounts.delete(account.id);
        this.accounts.set(account.id, account);
        started = true;
      }
    }
    let next = Infinity;
    for (const account of this.accounts.values()) {
      const head = account.queue[0];
      if (head && account.running < perAccountConcurrency && head.dueAt > now) next = Math.min(next, head.dueAt);
    }
    if (next < this.timerAt || this.timerAt <= now) {
      clearTimeout(this.timer);
      this.timerAt = next;
      if (next !== Infinity) {
        this.timer = setTimeout(() => {
          this.timerAt = Infinity;
          this.pump();
        }, Math.min(next - now, 2 ** 31 - 1));
      }
    }
  }

  private start(account: Account, id: string): void {
    account.running += 1;
    this.inFlight += 1;
    this.running.set(id, {});
    const retryAfter = this.options.retryAfterErrorMs ?? 5_000;
    const task: Promise<void> = this.options
      .run(id, account.id)
      .catch((error: unknown) => {
        if (this.stopped) return;
        this.options.logger.error({ err: error, id, account: account.id }, `${this.options.what} failed; trying again in ${retryAfter / 1000} s`);
        this.running.get(id)!.rerunAt = Date.now() + retryAfter;
      })
      .finally(() => {
        account.running -= 1;
        this.inFlight -= 1;
        const rerunAt = this.running.get(id)?.rerunAt;
        this.running.delete(id);
        this.tasks.delete(task);
        if (account.running === 0 && account.queue.length === 0) this.accounts.delete(account.id);
        if (rerunAt !== undefined) this.enqueue(id, account.id, rerunAt);
        else this.pump();
      });
    this.tasks.add(task);
  }
}

/** Where a job due at `dueAt` goes in a queue sorted by due time (after equal ones). */
function insertionIndex(queue: Queued[], dueAt: number): number {
  let low = 0;
  let high = queue.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (queue[mid]!.dueAt <= dueAt) low = mid + 1;
    else high = mid;
  }
  return low;
}
