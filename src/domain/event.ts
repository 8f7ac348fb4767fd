import { exactKey } from '../shared/ids.js';
import { DomainError, type Decider } from './decider.js';
import { assertTextSize } from './text-size.js';

/** An event (the occasion guests attend), as the spec's Event object describes it. */
export interface EventDetails {
  title: string;
  startTime: string;
  endTime: string;
  active?: boolean;
  timeZoneId?: string;
  tags?: string;
  customData?: string;
  /** Issue 14: the guests' personal data is erased this many days after endTime (absent: kept). */
  retentionDays?: number;
}

export type EventEvent =
  /**
   * `idAsSent`: the id is kept exactly as sent (every event created since plain ids kept their
   * case). An event without it was created when a GUID-shaped id was lowercased; a request
   * spelling its id in another case still finds it (storedEventId, docs/identifiers.md).
   */
  | { type: 'EventCreated'; data: { eventId: string; clientId: string; idAsSent?: true } & EventDetails }
  | { type: 'EventUpdated'; data: { eventId: string; clientId: string } & EventDetails };

/** A save's details; `retentionDays: null` removes the event's own retention (the client's default then applies). */
export type EventChanges = Omit<EventDetails, 'retentionDays'> & { retentionDays?: number | null };

export type EventCommand = {
  type: 'SaveEvent';
  eventId: string;
  clientId: string;
  details: EventChanges;
};

export type EventState =
  | { status: 'none' }
  | { status: 'exists'; clientId: string; details: EventDetails };

/** Event ids are the caller's and scoped per client (docs/identifiers.md). */
export const eventStream = (clientId: string, eventId: string): string => `event-${exactKey(clientId, eventId)}`;
/** Before ids were scoped, an event (a GUID then) had the stream `event-<guid>`; such streams are still used. */
export const legacyEventStream = (eventId: string): string => `event-${eventId.toLowerCase()}`;

const sameDetails = (a: EventDetails, b: EventDetails): boolean =>
  JSON.stringify(a, Object.keys(a).sort()) === JSON.stringify(b, Object.keys(b).sort());

export const eventDecider: Decider<EventState, EventCommand, EventEvent> = {
  initialState: () => ({ status: 'none' }),

  evolve(_state, event) {
    return { status: 'exists', clientId: event.data.clientId, details: detailsOf(event.data) };
  },

  decide(command, state) {
    // An update changes the fields it is given and keeps the others (the PUT user rule; docs/guests.md).
    const { retentionDays, ...given } = command.details;
    const details: EventDetails = state.status === 'exists' ? { ...state.details, ...detailsOf(given as EventDetails) } : detailsOf(given as EventDetails);
    if (retentionDays !== undefined && retentionDays !== null) details.retentionDays = retentionDays;
    if (retentionDays === null) delete details.retentionDays;
    if (Date.parse(details.endTime) <= Date.parse(details.startTime)) {
      throw new DomainError('validation_error', 'endTime must be after startTime', {
        errors: [{ path: 'endTime', message: 'must be after startTime' }],
      });
    }
    // The event's document holds these texts: at most 4 MiB together (MongoDB's 16 MiB; docs/api.md, Strings).
    assertTextSize('event', (['title', 'timeZoneId', 'tags', 'customData'] as const).map((field) => ({ field, value: details[field], given: given[field] !== undefined })));
    const data = { eventId: command.eventId, clientId: command.clientId, ...details };
    if (state.status === 'none') return [{ type: 'EventCreated', data: { ...data, idAsSent: true } }];
    // Another client's event is reported as missing, never as forbidden.
    if (state.clientId !== command.clientId) throw new DomainError('not_found', 'event not found');
    if (sameDetails(state.details, details)) return [];
    return [{ type: 'EventUpdated', data }];
  },
};

function detailsOf(data: EventDetails): EventDetails {
  const { title, startTime, endTime, active, timeZoneId, tags, customData, retentionDays } = data;
  return Object.fromEntries(
    Object.entries({ title, startTime, endTime, active, timeZoneId, tags, customData, retentionDays }).filter(([, v]) => v !== undefined),
  ) as unknown as EventDetails;
}
