import type { Bus, BusMessage, Consumer } from '../adapters/bus/port.js';
import { MailerError, type Mailer, type MailMessage } from '../adapters/mailer/port.js';
import { handleCommand, type CommandContext } from '../commands/handle-command.js';
import { findEvent } from '../commands/events.js';
import { findTemplateDoc } from '../commands/templates.js';
import type { Services } from '../commands/services.js';
import { domainOfAddress, domainVerifiedByAnother, enabledSendingAddress } from '../commands/sending-domain.js';
import { invitationMessage, type InvitationParts, type Sender } from '../comms/invitation-message.js';
import { unsafeLinks, type LinkPolicy } from '../comms/link-safety.js';
import { withEmbeddedImages } from '../comms/code-images.js';
import type { PdfRenderer } from '../comms/pdf-pool.js';
import { emailAddressProblem } from '../domain/email-address.js';
import { personalGuestFields } from '../domain/personal-data.js';
import { withoutAddresses } from '../shared/redaction.js';
import { guestStream, legacyGuestStream, type GuestEvent } from '../domain/guest.js';
import {
  invitationDecider,
  invitationStream,
  type InvitationCommand,
  type InvitationEvent,
  type InvitationIds,
  type InvitationState,
  type SendFailureCode,
} from '../domain/invitation.js';
import { derivedId } from '../domain/webhook.js';
import type { AccountDoc } from '../projections/accounts.js';
import { findOwnGuest } from '../commands/guest-lookup.js';
import { shownGuestId, guestStreamOf } from '../projections/guests.js';
import { invitationsProjection, type InvitationDoc } from '../projections/invitations.js';
import { suppressionOf } from '../commands/suppressions.js';
import type { TemplateDoc } from '../projections/templates.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { runInCarriedTrace } from '../observability/trace.js';
import { FairQueue } from './fair-queue.js';
import { readModelCatchesUp } from './read-model-wait.js';
import { eventOfMessage } from './event-message.js';
import { topics } from './topics.js';
import { workerConsumerRetry } from './consumer-retry.js';
import type { Worker } from './worker.js';

export interface SendSettings {
  mailer: Mailer;
  /** Renders attachPdf attachments off the main thread. */
  pdf: PdfRenderer;
  linkPolicy: LinkPolicy;
  sender: Sender;
  /** Waits before retrying a send the provider refused for now; attempts = length + 1. */
  retryDelaysMs: number[];
  /** Sends in flight at once in this process; an account gets at most half (at least 1). */
  concurrency: number;
  /**
   * How long an attempt is held without a heartbeat before another worker takes it for
   * interrupted; the heartbeat renews it every third of that while the attempt runs.
   */
  attemptLeaseMs: number;
  /** How often this worker looks for sends no live worker holds (another worker was killed); 0: never. */
  sweepMs?: number;
  /**
   * Waits before trying again a send the provider refused on our credentials (SendGrid 401 or a
   * key-scope 403, SMTP authentication); the last one repeats. Not counted against retryDelaysMs.
   */
  credentialsRetryDelaysMs?: number[];
  /** How long a send is held on refused credentials before it fails as provider_credentials_refused. */
  credentialsHoldMs?: number;
  /** Counts outcomes in invitation_sends_total; says when sends are blocked on the provider's credentials. */
  metrics?: Pick<Metrics, 'countSend'> & Partial<Pick<Metrics, 'setSendsBlockedOnCredentials'>>;
}

/** Defaults of the hold on refused credentials (docs/invitations.md): 10 s growing to 5 min, for a day. */
export const defaultCredentialsRetryDelaysMs = [10_000, 30_000, 60_000, 120_000, 300_000];
export const defaultCredentialsHoldMs = 86_400_000;

export const sendWorkerGroup = 'send-worker';

/**
 * A failed attempt in the invitation's terms. `retryAfterMs` is set when another attempt may follow,
 * no sooner than that (the provider's rate-limit reset, else 0). A hand-over whose outcome is unknown
 * (the provider may have accepted it: a timeout) is not retried: a guest getting the invitation twice
 * is worse than an organizer seeing one failure (docs/invitations.md, Exactly one email).
 */
function attemptFailure(error: unknown): { code: SendFailureCode; error: string; permanent: boolean; retryAfterMs?: number } {
  if (!(error instanceof MailerError)) return { code: 'render_failed', error: `the email could not be built: ${(error as Error).message}`, permanent: true };
  // Our credentials, not the email: the provider took nothing, so the send is held (recordFailure).
  if (error.credentialsRefused) return { code: 'provider_credentials_refused', error: `${error.message}; ${error.credentialsRefused}`, permanent: false, retryAfterMs: 0 };
  if (error.outcomeUnknown) {
    const advice = 'check the provider activity, then send again with POST /comms/v1/api/comms/send';
    return { code: 'outcome_unknown', error: `${error.message}; ${advice}`, permanent: false };
  }
  if (error.permanent) return { code: 'provider_rejected', error: error.message, permanent: true };
  return { code: 'provider_unavailable', error: error.message, permanent: false, retryAfterMs: error.retryAfterMs ?? 0 };
}

/** `personal`: the guest's values, kept out of this worker's log lines (docs/personal-data.md, What the logs hold). */
type Refusal = { refuse: SendFailureCode; error: string; personal?: readonly string[] };
type Prepared = { message: MailMessage; attachPdf: boolean; templateName: string; guestStream: string; personal: readonly string[] };

/**
 * The send worker (spec: check-in rule 1, Events comms.sent/failed/skipped): a consumer group
 * on `comms.invitations.v1`. For each InvitationRequested it records the invitation
 * (`invitation-<attendeeInvitationId>`, SendRequested) and queues the send; the queue sends
 * off the consumer's path, with per-account fairness, and retries what the provider refused
 * for now. Every step is an event on the invitation stream; the webhook dispatcher turns
 * SendSucceeded, SendFailed and SendSkipped into comms.sent, comms.failed and comms.skipped.
 */
export class SendWorker implements Worker {
  readonly name = 'send-worker';
  private consumer?: Consumer;
  private queue?: FairQueue;
  private sweeper?: NodeJS.Timeout;
  private sweeping = false;
  /** Invitations queued because a bus message asked for them (again): only those report comms.skipped. */
  private readonly requestedByBus = new Set<string>();
  /** The provider's last answer to this process refused our credentials: held sends wait for their retryAt. */
  private credentialsBlocked = false;
  private readonly logger: Logger;

  constructor(
    private readonly bus: Bus,
    private readonly services: Services,
    private readonly settings: SendSettings,
  ) {
    this.logger = services.logger.child({ worker: this.name });
  }

  async start(): Promise<void> {
    if (!this.queue) {
      this.queue = new FairQueue({
        concurrency: this.settings.concurrency,
        perAccountConcurrency: Math.max(1, Math.floor(this.settings.concurrency / 2)),
        run: (invitationId, clientId) => this.sendInTrace(invitationId, clientId),
        logger: this.logger,
        what: 'invitation send (recording it)',
      });
      await this.resume();
      if (this.settings.sweepMs) {
        this.sweeper = setInterval(() => void this.sweep(), this.settings.sweepMs);
        this.sweeper.unref();
      }
    }
    this.consumer ??= await this.bus.consume({ groupId: sendWorkerGroup, topics: [topics.invitations], ...workerConsumerRetry }, (message) => this.handle(message));
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    await this.consumer?.close();
    await this.queue?.stop();
    await this.settings.mailer.close();
    await this.settings.pdf.close();
  }

  /** Sends queued or in flight in this process. */
  get backlog(): number {
    return this.queue?.backlog ?? 0;
  }

  /** Re-queues what a previous run left: invitations requested, retrying or cut short mid-attempt. */
  private async resume(): Promise<void> {
    const queue = this.queue!;
    await readModelCatchesUp(this.services, invitationsProjection, { logger: this.logger, isStopped: () => queue.isStopped });
    const invitations = this.services.readStore.collection<InvitationDoc>('invitations');
    let resumed = 0;
    for await (const doc of invitations.stream({ status: { $in: ['requested', 'retrying', 'sending'] } })) {
      queue.enqueue(doc._id, doc.clientId, Date.now());
      resumed += 1;
    }
    if (resumed > 0) this.logger.info({ resumed }, 'invitation sends resumed');
  }

  /**
   * Takes over what no live worker holds (issue 12, item 4): sends another worker process took
   * from the bus and then died with, queued in its memory or mid-attempt. Requested or retrying
   * invitations older than a lease, and attempts whose lease ran out, are queued here; the
   * invitation's stream decides (optimistic concurrency), so a send two workers both queue is
   * still made once.
   */
  private async sweep(): Promise<void> {
    const queue = this.queue;
    if (!queue || queue.isStopped || this.sweeping) return;
    this.sweeping = true;
    try {
      const now = Date.now();
      const staleBefore = new Date(now - this.settings.attemptLeaseMs).toISOString();
      const invitations = this.services.readStore.collection<InvitationDoc>('invitations');
      for await (const doc of invitations.stream({ status: { $in: ['requested', 'retrying', 'sending'] } })) {
        if (queue.isStopped) return;
        const updatedAt = (doc as { updatedAt?: string }).updatedAt ?? doc.requestedAt;
        if (updatedAt > staleBefore) continue;
        queue.enqueue(doc._id, doc.clientId, now);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'sweep for orphaned sends failed; it runs again');
    } finally {
      this.sweeping = false;
    }
  }

  private async handle(message: BusMessage): Promise<void> {
    if (message.headers['event-type'] !== undefined && message.headers['event-type'] !== 'InvitationRequested') return;
    // An event published without its data (too large for the bus) is read from the event store.
    const stored = await eventOfMessage(message, this.services.eventStore);
    if (stored.type !== 'InvitationRequested') return;
    const data = stored.data as Extract<GuestEvent, { type: 'InvitationRequested' }>['data'];
    const ids: InvitationIds = {
      attendeeInvitationId: data.attendeeInvitationId,
      clientId: stored.metadata.tenantId,
      attendeeId: data.guestId,
      eventId: data.eventId,
      templateId: data.templateId,
      ...(data.guestIdAsSent ? { attendeeIdAsSent: data.guestIdAsSent } : {}),
      ...(data.templateIdAsSent ? { templateIdAsSent: data.templateIdAsSent } : {}),
      ...(data.correlationId ? { correlationId: data.correlationId } : {}),
      ...(data.noEmail ? { noEmail: true as const } : {}),
      ...(data.invalidEmail ? { invalidEmail: true as const } : {}),
    };
    // The guest and template as of this request: the read models have caught up with it.
    await this.services.readYourWrites(stored.position);
    await this.decide(ids.clientId, ids.attendeeInvitationId, { type: 'RequestSend', ids, at: this.now() }, {
      correlationId: stored.metadata.correlationId,
      causationId: stored.id,
      eventId: derivedId('invitation', stored.id, 'requested'),
    });
    // Also for a request seen before: the send then finds it sent and reports comms.skipped.
    this.requestedByBus.add(ids.attendeeInvitationId);
    this.queue!.enqueue(ids.attendeeInvitationId, ids.clientId, Date.now());
  }

  /**
   * A queued send runs off the consumer's path: it takes up the trace of the request that asked
   * for it (kept in the invitation's first event), so its log lines and events carry that request id.
   */
  private async sendInTrace(invitationId: string, clientId: string): Promise<void> {
    const [first] = await this.services.eventStore.readStream(invitationStream(invitationId), { maxCount: 1 });
    await runInCarriedTrace(first?.metadata, () => this.send(invitationId, clientId));
  }

  /** One turn of an invitation: check, start an attempt, hand the email over, record the outcome. */
  private async send(invitationId: string, clientId: string): Promise<void> {
    const repeatedRequest = this.requestedByBus.delete(invitationId);
    const state = await this.load(invitationId);
    if (state.status === 'none' || state.status === 'failed') return;
    // Queued by a sweep or a resume from a read model that lags: sent is done, not a request to skip.
    if (state.status === 'sent' && !repeatedRequest) return;
    const heldMayTry = state.status === 'retrying' && state.credentialsHeldSince !== undefined && !this.credentialsBlocked;
    if (state.status === 'retrying' && Date.parse(state.retryAt!) > Date.now() && !heldMayTry) {
      this.queue!.enqueue(invitationId, clientId, Date.parse(state.retryAt!));
      return;
    }
    if (state.status === 'sending' && Date.parse(state.leaseUntil!) > Date.now()) {
      this.queue!.enqueue(invitationId, clientId, Date.parse(state.leaseUntil!) + 1);
      return;
    }
    const prepared = state.status === 'sent' ? undefined : await this.prepare(state.ids);
    if (prepared && 'refuse' in prepared) {
      await this.decide(clientId, invitationId, { type: 'Refuse', code: prepared.refuse, error: prepared.error, at: this.now() }, {}, prepared.personal);
      return;
    }
    const started = await this.decide(clientId, invitationId, {
      type: 'StartAttempt',
      to: prepared?.message.to.email ?? state.to ?? '',
      at: this.now(),
      leaseMs: this.settings.attemptLeaseMs,
      idempotentProvider: this.settings.mailer.kind === 'outbox',
      ...(heldMayTry ? { credentialsRetry: true } : {}),
    });
    const attempt = started.events.find((e) => e.type === 'SendStarted');
    if (!attempt || attempt.type !== 'SendStarted' || !prepared) return;
    await this.attempt(invitationId, clientId, attempt.data.attempt, prepared);
  }

  private async attempt(invitationId: string, clientId: string, attempt: number, prepared: Prepared): Promise<void> {
    let message = prepared.message;
    // The heartbeat: while this attempt runs, its lease stays a full lease ahead.
    const leaseMs = this.settings.attemptLeaseMs;
    const heartbeat = setInterval(() => {
      void this.decide(clientId, invitationId, { type: 'RenewLease', attempt, at: this.now(), leaseMs }).catch((error: unknown) =>
        this.logger.warn({ err: error, invitationId }, 'send lease not renewed; retrying at the next beat'),
      );
    }, Math.max(100, Math.floor(leaseMs / 3)));
    heartbeat.unref();
    try {
      if (prepared.attachPdf) {
        // The PDF embeds the inline code images the html names by cid: (a PDF has no attachments to point at).
        const inline = (message.attachments ?? []).map((a) => ({ cid: a.contentId, content: a.content, contentType: a.contentType }));
        const content = await this.settings.pdf.render(withEmbeddedImages(message.html, inline), { title: prepared.templateName });
        message = {
          ...message,
          attachments: [...(message.attachments ?? []), { filename: `${prepared.templateName}.pdf`, contentType: 'application/pdf', content }],
        };
      }
      const receipt = await this.settings.mailer.send(message);
      // An erasure while this email was made cleaned the outbox before its file existed (the
      // address was read before the erasure): the file goes now (docs/personal-data.md).
      if (this.settings.mailer.discard && (await this.erased(prepared.guestStream))) await this.settings.mailer.discard(receipt);
      await this.decide(clientId, invitationId, {
        type: 'RecordSent',
        attempt,
        provider: this.settings.mailer.kind,
        providerMessageId: receipt.providerMessageId,
        at: this.now(),
        attachedPdf: prepared.attachPdf,
      });
      await this.released().catch((error: unknown) => this.logger.warn({ err: error }, 'held invitation sends not re-queued; each goes at its retryAt'));
    } catch (error) {
      if (this.queue!.isStopped) return;
      await this.recordFailure(invitationId, clientId, attempt, error, prepared.personal);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Whether the guest's stream records its erasure (read from the store, not from a read model that may lag). */
  private async erased(guestStream: string): Promise<boolean> {
    const events = await this.services.eventStore.readStream(guestStream, { personalData: false });
    return events.some((event) => event.type === 'GuestErased');
  }

  private async recordFailure(invitationId: string, clientId: string, attempt: number, error: unknown, personal: readonly string[]): Promise<void> {
    if (!(error instanceof MailerError)) this.logger.error({ err: loggedBuildError(error, personal), invitationId }, 'the invitation email could not be built');
    const { retryAfterMs, ...failure } = attemptFailure(error);
    const state = await this.load(invitationId);
    const holds = state.status === 'none' ? 0 : (state.credentialHolds ?? 0);
    if (failure.code === 'provider_credentials_refused') return this.hold(invitationId, clientId, attempt, failure.error, state, holds);
    // Attempts held on refused credentials do not use up the retry schedule.
    const delay = this.settings.retryDelaysMs[attempt - 1 - holds];
    const retryAt = retryAfterMs !== undefined && delay !== undefined ? new Date(Date.now() + Math.max(delay, retryAfterMs)).toISOString() : undefined;
    await this.decide(clientId, invitationId, { type: 'RecordAttemptFailed', attempt, ...failure, ...(retryAt ? { retryAt } : {}), at: this.now() }, {}, personal);
    if (retryAt) this.queue!.enqueue(invitationId, clientId, Date.parse(retryAt));
  }

  /**
   * The provider refused our credentials (docs/invitations.md, Held on provider credentials): not the
   * guest's or the email's fault, and nothing was accepted. The send is held and tried again, with a
   * growing delay, until the hold (credentialsHoldMs since the first refusal) is over; only then does
   * it fail as provider_credentials_refused. One error line says what to fix, when the block begins.
   */
  private async hold(invitationId: string, clientId: string, attempt: number, error: string, state: InvitationState, holds: number): Promise<void> {
    if (!this.credentialsBlocked) {
      this.credentialsBlocked = true;
      this.settings.metrics?.setSendsBlockedOnCredentials?.(true);
      this.logger.error({ provider: this.settings.mailer.kind, error: withoutAddresses(error) }, 'the email provider refused our credentials: invitation sends are held until they are fixed');
    }
    const delays = this.settings.credentialsRetryDelaysMs ?? defaultCredentialsRetryDelaysMs;
    const holdMs = this.settings.credentialsHoldMs ?? defaultCredentialsHoldMs;
    const now = this.services.clock.now().getTime();
    const heldSince = state.status !== 'none' && state.credentialsHeldSince ? Date.parse(state.credentialsHeldSince) : now;
    const over = now - heldSince >= holdMs;
    const retryAt = over ? undefined : new Date(Date.now() + (delays[Math.min(holds, delays.length - 1)] ?? 0)).toISOString();
    const text = over ? `${error}; held since ${new Date(heldSince).toISOString()}, not sent` : error;
    await this.decide(clientId, invitationId, { type: 'RecordAttemptFailed', attempt, code: 'provider_credentials_refused', error: text, permanent: false, ...(retryAt ? { retryAt } : {}), at: this.now() });
    if (retryAt) this.queue!.enqueue(invitationId, clientId, Date.parse(retryAt));
  }

  /** The provider took an email after refusing our credentials: the held sends go now. */
  private async released(): Promise<void> {
    if (!this.credentialsBlocked) return;
    this.credentialsBlocked = false;
    this.settings.metrics?.setSendsBlockedOnCredentials?.(false);
    this.logger.info({ provider: this.settings.mailer.kind }, 'the email provider accepts our credentials again: held invitation sends resume');
    const queue = this.queue!;
    const invitations = this.services.readStore.collection<InvitationDoc>('invitations');
    for await (const doc of invitations.stream({ status: { $in: ['retrying'] } })) {
      if (queue.isStopped) return;
      queue.enqueue(doc._id, doc.clientId, Date.now());
    }
  }

  /** Everything the email needs, or why it cannot be sent. Read at send time: the guest's current email counts. */
  /**
   * A guest the guests read model does not show, though its stream holds events, is one the read
   * model has not caught up with (a MongoDB store down or slow past the wait for it): the send is
   * tried again (the queue's rerun) rather than failed `guest_not_found`, which lost the guest's
   * invitation for good. Guests are never deleted, so only a guest with no stream is not found.
   */
  private async guestNotShownYet(ids: InvitationIds): Promise<void> {
    for (const stream of [guestStream(ids.clientId, ids.attendeeId), legacyGuestStream(ids.attendeeId)]) {
      const [first] = await this.services.eventStore.readStream(stream, { maxCount: 1, personalData: false });
      if (first && (stream === guestStream(ids.clientId, ids.attendeeId) || first.metadata.tenantId === ids.clientId)) {
        throw new Error(`the guests read model does not show guest ${ids.attendeeId} yet (read models behind); the send is tried again`);
      }
    }
  }

  private async prepare(ids: InvitationIds): Promise<Prepared | Refusal> {
    const { readStore } = this.services;
    const [guest, template, event, account] = await Promise.all([
      findOwnGuest(this.services, ids.clientId, ids.attendeeId),
      findTemplateDoc(this.services, ids.clientId, ids.templateId),
      findEvent(this.services, ids.clientId, ids.eventId),
      readStore.collection<AccountDoc>('accounts').get(ids.clientId),
    ]);
    if (!guest) {
      await this.guestNotShownYet(ids);
      return { refuse: 'guest_not_found', error: 'the guest no longer exists' };
    }
    const personal = personalValuesOf(guest);
    if (!template || template.clientId !== ids.clientId || template.eventId !== guest.eventId || !event) {
      return { refuse: 'template_not_found', error: 'the template does not exist for this guest’s event' };
    }
    // Requested without a usable email: the request made when the email came or was corrected is the one that sends.
    if (ids.noEmail) return { refuse: 'no_email', error: 'the guest had no email address when the invitation was requested' };
    if (!guest.email) return { refuse: 'no_email', error: 'the guest has no email address' };
    if (ids.invalidEmail) return { refuse: 'invalid_email', error: 'the guest’s email was not an email address when the invitation was requested' };
    const problem = emailAddressProblem(guest.email);
    if (problem) return { refuse: 'invalid_email', error: `the guest’s email ${problem.replace(/^must be/, 'is not')}`, personal };
    if (!account?.commsApiEnabled) return { refuse: 'comms_api_not_enabled', error: 'the comms API is not enabled for this account' };
    // Spec, Authentication rule 3: the guest path sends too, so it is gated like the comms routes.
    if (!account.senderTrusted) return { refuse: 'trust_required', error: 'sender verification has not been completed for this account' };
    const takenSender = template.fromAddress ? await domainVerifiedByAnother(this.services, ids.clientId, domainOfAddress(template.fromAddress)) : undefined;
    if (takenSender) {
      return { refuse: 'from_address_not_allowed', error: `the template's fromAddress is at ${takenSender}, another account's verified sending domain` };
    }
    const suppressed = await suppressionOf(this.services, ids.clientId, guest.email);
    if (suppressed) {
      return { refuse: 'previous_send_permanently_failed', error: `${guest.email} was reported ${suppressed.reason} on ${suppressed.at}`, personal };
    }
    const parts: InvitationParts = {
      attendeeInvitationId: ids.attendeeInvitationId,
      clientId: ids.clientId,
      // Guest.email is any string (spec); white space around an address is not part of it.
      guest: { ...guest, id: shownGuestId(guest), email: guest.email.trim() },
      template,
      event,
      account,
    };
    // Spec: while the custom domain is enabled sends come from it; otherwise from the default address.
    const customAddress = await enabledSendingAddress(this.services, ids.clientId);
    const sender = customAddress ? { ...this.settings.sender, address: customAddress } : this.settings.sender;
    let message: MailMessage;
    try {
      message = await invitationMessage(parts, sender);
    } catch (error) {
      // Building is pure (merge, code images): trying again builds the same. Before, such an error
      // was retried every 5 s for ever, each time logged whole by the queue.
      this.logger.error({ err: loggedBuildError(error, personal), invitationId: ids.attendeeInvitationId }, 'the invitation email could not be built');
      return { refuse: 'render_failed', error: `the email could not be built: ${(error as Error).message}`, personal };
    }
    // Checked after merging: a guest's own data in a link (href="{{additionalInfo}}") must pass too.
    const unsafe = unsafeLinks(message.html, this.settings.linkPolicy);
    if (unsafe.length > 0) return { refuse: 'spam_check_failed', error: unsafe.map((u) => `${u.url}: ${u.reason}`).join('; '), personal };
    return { message, attachPdf: template.attachPdf, templateName: template.name, guestStream: guestStreamOf(guest), personal };
  }

  private async load(invitationId: string): Promise<InvitationState> {
    let state = invitationDecider.initialState();
    for (const event of await this.services.eventStore.readStream(invitationStream(invitationId))) {
      state = invitationDecider.evolve(state, event as never);
    }
    return state;
  }

  private async decide(
    clientId: string,
    invitationId: string,
    command: InvitationCommand,
    ids: { correlationId?: string; causationId?: string; eventId?: string } = {},
    personal: readonly string[] = [],
  ) {
    const context: CommandContext = {
      tenantId: clientId,
      actor: { type: 'system', id: this.name },
      correlationId: ids.correlationId ?? invitationId,
      ...(ids.causationId ? { causationId: ids.causationId } : {}),
      now: this.services.clock.now(),
    };
    const eventId = ids.eventId;
    const result = await handleCommand(this.services.eventStore, invitationDecider, invitationStream(invitationId), command, context, {
      ...(eventId ? { eventIds: (index: number) => derivedId(eventId, String(index)) } : {}),
    });
    for (const event of result.events) this.report(invitationId, event, personal);
    return result;
  }

  /** One log line per step of a send, and its outcome counted. */
  private report(invitationId: string, event: InvitationEvent, personal: readonly string[]): void {
    const { metrics } = this.settings;
    switch (event.type) {
      case 'SendSucceeded':
        metrics?.countSend('sent');
        this.logger.info({ invitationId, attempt: event.data.attempt, provider: event.data.provider }, 'invitation sent');
        return;
      case 'SendFailed':
        metrics?.countSend('failed', event.data.code);
        // A mail server's refusal often quotes the recipient ('550 5.1.1 <ann@example.com>: ...'), a refused
        // link the guest's own data merged into it: logs keep no guest's address nor any of its values.
        this.logger.warn({ invitationId, code: event.data.code, error: withoutValues(withoutAddresses(event.data.error), personal) }, 'invitation send failed');
        return;
      case 'SendSkipped':
        metrics?.countSend('skipped', event.data.reason);
        this.logger.info({ invitationId, reason: event.data.reason }, 'invitation send skipped');
        return;
      case 'SendAttemptFailed':
        metrics?.countSend('attempt_failed', event.data.code);
        this.logger.warn({ invitationId, attempt: event.data.attempt, code: event.data.code, retryAt: event.data.retryAt }, 'invitation send attempt failed; retrying');
        return;
      default:
        this.logger.info({ invitationId, event: event.type }, `invitation ${event.type}`);
    }
  }

  private now(): string {
    return this.services.clock.now().toISOString();
  }
}

/** The guest's personal values (its names, email, barcode, additionalInfo, customId, customData) that a text may quote. */
export function personalValuesOf(guest: Partial<Record<(typeof personalGuestFields)[number], unknown>>): string[] {
  return personalGuestFields.flatMap((field) => (field !== 'image' && typeof guest[field] === 'string' ? [guest[field] as string] : []));
}

/**
 * Each of `values` (3 characters or more, trimmed, as written or percent-encoded, any case) in a
 * text replaced by `[Redacted]`, for a log line (docs/personal-data.md, What the logs hold).
 */
export function withoutValues(text: string, values: readonly string[]): string {
  const forms = new Set<string>();
  for (const value of values) {
    const trimmed = value.trim();
    if (trimmed.length < 3) continue;
    forms.add(trimmed);
    forms.add(encodeURIComponent(trimmed));
    forms.add(encodeURI(trimmed));
  }
  // Longest first, so a value inside another is not left half-redacted.
  const pattern = [...forms].sort((a, b) => b.length - a.length).map((form) => form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  return pattern ? text.replace(new RegExp(pattern, 'gi'), '[Redacted]') : text;
}

/**
 * An error of building an email (merge, code images, the PDF), as a log line may hold it: a new
 * Error with the name, and the message and stack without email addresses and the guest's values
 * (withoutValues). The libraries that build may quote what they were given, which is the guest's
 * merged data; the error's other properties (a library's `cause`, its input) are left out, since
 * pino's serializer would write them whole. The error itself stays in the invitation, sealed.
 */
export function loggedBuildError(error: unknown, personal: readonly string[]): Error {
  const clean = (text: string) => withoutValues(withoutAddresses(text), personal);
  const original = error instanceof Error ? error : new Error(String(error));
  const logged = new Error(clean(original.message));
  logged.name = original.name;
  logged.stack = original.stack === undefined ? undefined : clean(original.stack);
  return logged;
}

/** Email addresses in a text replaced by `[Redacted]` (src/shared/redaction.ts). */
export { withoutAddresses };
