import type { EventStore } from '../adapters/eventstore/port.js';
import { accountDecider, accountStream, type AccountEvent, type AccountState } from '../domain/account.js';
import { eventsToHead } from './events-to-head.js';

/**
 * An account as an operator looks it up (`npm run admin -- list-accounts`): its id, who it is,
 * its access and the ids of its live subscription keys. No secret, no hash.
 */
export interface AccountSummary {
  id: string;
  email: string;
  userName: string;
  companyName?: string;
  commsApiEnabled: boolean;
  senderTrusted: boolean;
  subscriptionKeyIds: string[];
}

const summary = (id: string, state: Extract<AccountState, { status: 'registered' }>): AccountSummary => ({
  id,
  email: state.profile.email,
  userName: state.profile.userName,
  ...(state.profile.companyName !== undefined ? { companyName: state.profile.companyName } : {}),
  commsApiEnabled: state.commsApiEnabled,
  senderTrusted: state.senderTrusted,
  subscriptionKeyIds: state.keyIds,
});

/**
 * Every account, folded from the event store rather than read from the read models: an operator
 * command runs beside (or without) the service, whose projections may not have caught up with an
 * account just created by another command.
 */
export async function listAccounts(eventStore: EventStore): Promise<AccountSummary[]> {
  const states = new Map<string, AccountState>();
  for await (const page of eventsToHead(eventStore, { streamPrefixes: [accountStream('')] })) {
    for (const event of page.events) {
      const id = (event.data as { clientId?: string }).clientId;
      if (typeof id !== 'string') continue;
      states.set(id, accountDecider.evolve(states.get(id) ?? accountDecider.initialState(), event as unknown as AccountEvent));
    }
  }
  return [...states].flatMap(([id, state]) => (state.status === 'registered' ? [summary(id, state)] : []));
}

/** One account by its id, undefined when the event store holds none. */
export async function findAccount(eventStore: EventStore, id: string): Promise<AccountSummary | undefined> {
  const events = await eventStore.readStream(accountStream(id));
  const state = events.reduce<AccountState>((s, event) => accountDecider.evolve(s, event as unknown as AccountEvent), accountDecider.initialState());
  return state.status === 'registered' ? summary(id, state) : undefined;
}
