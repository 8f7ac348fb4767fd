import { scopedKey } from '../shared/ids.js';

/**
 * Which fields of which events are a person's data (issue 14, crypto-shredding). The event
 * store codec (src/personal-data/sealed-event-store.ts) seals exactly these with the data key
 * of the guest named by `owner`; everything else stays readable, so counts, scans and the
 * audit trail survive an erasure.
 */

/** A guest's personal details: sealed in events, removed from read models on erasure. */
export const personalGuestFields = [
  'firstName',
  'otherNames',
  'lastName',
  'email',
  'additionalInfo',
  'barcode',
  'image',
  'customId',
  'customData',
] as const;

export interface PersonalDataRule {
  streamPrefix: string;
  types: readonly string[];
  /** The object inside `data` that holds the fields (`changes` of GuestDetailsChanged); absent: `data` itself. */
  within?: string;
  fields: readonly string[];
  /** The id of the data key that seals the fields: the owning guest's dataKeyId. */
  owner: (data: Record<string, unknown>, clientId: string) => string | undefined;
}

/**
 * A guest's data key id: per client and guest (the guest's storage key, `<client>:<guid>`, as
 * guestKey in guest.ts), so erasing one client's guest never shreds another client's guest with
 * the same GUID. Keys made before guest ids were scoped have the bare GUID as id; sealed events
 * name their key, so those stay readable (docs/personal-data.md).
 */
export const dataKeyId = (clientId: string, guestId: unknown): string | undefined =>
  typeof guestId === 'string' && guestId !== '' ? scopedKey(clientId, guestId) : undefined;

/**
 * The data key of one door scan that matched no single guest (UnmatchedScanRejected): what was
 * scanned may be a barcode or customId a guest gets later, so it is sealed with a key of its
 * own, which erasing such a guest deletes (docs/personal-data.md). `scan:` and the two encoded
 * parts keep it apart from any guest's key id.
 */
export const unmatchedScanKeyId = (clientId: string, scanId: unknown): string | undefined =>
  typeof scanId === 'string' && scanId !== '' ? `scan:${scopedKey(clientId, scanId)}` : undefined;

/**
 * The data key of one batch intent (EventStoreDB has no multi-stream transaction:
 * src/commands/batch-intents.ts). An intent repeats every command and event of its batch,
 * personal data included; its items are sealed with this key, which is deleted as soon as the
 * batch completed (keyEndRules), because only an open batch's intent is ever read again.
 */
export const batchIntentKeyId = (clientId: string, batchId: unknown): string | undefined =>
  typeof batchId === 'string' && batchId !== '' ? `batch:${scopedKey(clientId, batchId)}` : undefined;

/**
 * The data key of one registration of a team member (door staff): it seals the profile and the
 * password hash in TeamMemberRegistered, and the removal (TeamMemberRemoved) deletes it. Per
 * registration, not per id, because a removed id may be registered again (a new password) and a
 * deleted key leaves a tombstone that would drop the new registration's fields.
 */
export const teamMemberKeyId = (clientId: string, teamMemberId: unknown, registrationId: unknown): string | undefined =>
  typeof teamMemberId === 'string' && teamMemberId !== '' && typeof registrationId === 'string' && registrationId !== ''
    ? `teammember:${scopedKey(clientId, teamMemberId)}:${encodeURIComponent(registrationId)}`
    : undefined;

/** A team member's personal data and credential in TeamMemberRegistered (docs/personal-data.md, "Team members and account users"). */
export const personalTeamMemberFields = ['userName', 'email', 'firstName', 'lastName', 'passwordHash'] as const;

export const personalDataRules: readonly PersonalDataRule[] = [
  { streamPrefix: 'guest-', types: ['GuestRegistered'], fields: personalGuestFields, owner: (d, client) => dataKeyId(client, d.guestId) },
  { streamPrefix: 'guest-', types: ['GuestDetailsChanged'], within: 'changes', fields: personalGuestFields, owner: (d, client) => dataKeyId(client, d.guestId) },
  // A block reason may name the guest ("Ann Smith: banned"); a rejected scan repeats it. Events written before this hold it unsealed and read as written.
  { streamPrefix: 'guest-', types: ['GuestBlocked'], fields: ['reason'], owner: (d, client) => dataKeyId(client, d.guestId) },
  { streamPrefix: 'guest-', types: ['GuestScanRejected'], fields: ['blockedReason'], owner: (d, client) => dataKeyId(client, d.guestId) },
  // The customId reservation's key (its stream is named by a keyed hash of it: src/domain/reservation.ts).
  { streamPrefix: 'guestcustomid-', types: ['KeyReserved', 'KeyReleased'], fields: ['key'], owner: (d, client) => dataKeyId(client, d.ownerId) },
  { streamPrefix: 'invitation-', types: ['SendStarted', 'SendSucceeded'], fields: ['to'], owner: (d, client) => dataKeyId(client, d.attendeeId) },
  // A provider's error or bounce reason may quote the recipient ('550 5.1.1 <ann@example.com>: User unknown'):
  // sealed like the address itself. SendAttemptFailed events written before they named `attendeeId` stay as written.
  { streamPrefix: 'invitation-', types: ['SendAttemptFailed', 'SendFailed'], fields: ['error'], owner: (d, client) => dataKeyId(client, d.attendeeId) },
  { streamPrefix: 'invitation-', types: ['ProviderEventReceived'], fields: ['email', 'reason'], owner: (d, client) => dataKeyId(client, d.attendeeId) },
  // The webhook body of a comms.failed or comms.dropped, whose error may quote the recipient (the dispatcher sets attendeeId then).
  { streamPrefix: 'webhookdelivery-', types: ['WebhookDeliveryScheduled'], fields: ['body'], owner: (d, client) => dataKeyId(client, d.attendeeId) },
  { streamPrefix: 'door-', types: ['UnmatchedScanRejected'], fields: ['lookup'], owner: (d, client) => unmatchedScanKeyId(client, d.scanId) },
  // An intent too large for one append is written in parts (`batchlog-parts-<batchId>`), each a slice of the items' JSON.
  { streamPrefix: 'batchlog', types: ['BatchStarted', 'BatchIntentPart'], fields: ['items'], owner: (d, client) => batchIntentKeyId(client, d.batchId) },
  // Events written before registrations had an id hold these in plaintext and read as written.
  {
    streamPrefix: 'teammember-',
    types: ['TeamMemberRegistered'],
    fields: personalTeamMemberFields,
    owner: (d, client) => teamMemberKeyId(client, d.teamMemberId, d.registrationId),
  },
];

/** An event whose append ends the need for a data key: the event store codec deletes the key once the event is stored. */
export interface KeyEndRule {
  streamPrefix: string;
  type: string;
  keyId: (data: Record<string, unknown>, clientId: string) => string | undefined;
}

export const keyEndRules: readonly KeyEndRule[] = [
  // A completed batch's intent is never read again; an aborted one is read until its claims are given back (BatchReleased).
  { streamPrefix: 'batchlog', type: 'BatchCompleted', keyId: (d, client) => batchIntentKeyId(client, d.batchId) },
  { streamPrefix: 'batchlog', type: 'BatchReleased', keyId: (d, client) => batchIntentKeyId(client, d.batchId) },
  // An erased guest's key goes as GuestErased is stored, whoever stores it (the request, or the
  // batch completer after a crash): a retry cannot find the guest by its customId any more.
  { streamPrefix: 'guest-', type: 'GuestErased', keyId: (d, client) => dataKeyId(client, d.guestId) },
  // A removed team member's registration is never opened again: its profile and password hash go with the key.
  { streamPrefix: 'teammember-', type: 'TeamMemberRemoved', keyId: (d, client) => teamMemberKeyId(client, d.teamMemberId, d.registrationId) },
];

// By event type, so the codec's look-up per appended or read event is one Map get.
const byType = <T>(pairs: [string, T][]): Map<string, T[]> => {
  const map = new Map<string, T[]>();
  for (const [type, rule] of pairs) map.set(type, [...(map.get(type) ?? []), rule]);
  return map;
};
const keyEndRulesByType = byType(keyEndRules.map((rule) => [rule.type, rule]));
const personalDataRulesByType = byType(personalDataRules.flatMap((rule) => rule.types.map((type): [string, PersonalDataRule] => [type, rule])));

export function keyEndRuleFor(streamName: string, type: string): KeyEndRule | undefined {
  return keyEndRulesByType.get(type)?.find((rule) => streamName.startsWith(rule.streamPrefix));
}

export function personalDataRuleFor(streamName: string, type: string): PersonalDataRule | undefined {
  return personalDataRulesByType.get(type)?.find((rule) => streamName.startsWith(rule.streamPrefix));
}

/** Where an event keeps its sealed fields, and what it says after the key is gone. */
export interface SealedPersonalData {
  /** The data key's id (dataKeyId; the bare guest id for keys made before guest ids were scoped). */
  keyId: string;
  alg: 'A256GCM';
  /** base64url of iv (12 bytes) | tag (16 bytes) | ciphertext of the fields as JSON. */
  ciphertext: string;
}
