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
  /** The guest whose key seals the fields. */
  owner: (data: Record<string, unknown>) => unknown;
}

export const personalDataRules: readonly PersonalDataRule[] = [
  { streamPrefix: 'guest-', types: ['GuestRegistered'], fields: personalGuestFields, owner: (d) => d.guestId },
  { streamPrefix: 'guest-', types: ['GuestDetailsChanged'], within: 'changes', fields: personalGuestFields, owner: (d) => d.guestId },
  // The customId reservation's key (its stream name still holds the customId: docs/personal-data.md).
  { streamPrefix: 'guestcustomid-', types: ['KeyReserved', 'KeyReleased'], fields: ['key'], owner: (d) => d.ownerId },
  { streamPrefix: 'invitation-', types: ['SendStarted', 'SendSucceeded'], fields: ['to'], owner: (d) => d.attendeeId },
  { streamPrefix: 'invitation-', types: ['ProviderEventReceived'], fields: ['email'], owner: (d) => d.attendeeId },
];

export function personalDataRuleFor(streamName: string, type: string): PersonalDataRule | undefined {
  return personalDataRules.find((rule) => rule.types.includes(type) && streamName.startsWith(rule.streamPrefix));
}

/** Where an event keeps its sealed fields, and what it says after the key is gone. */
export interface SealedPersonalData {
  /** The data key's id: the guest's id (one key per guest). */
  keyId: string;
  alg: 'A256GCM';
  /** base64url of iv (12 bytes) | tag (16 bytes) | ciphertext of the fields as JSON. */
  ciphertext: string;
}
