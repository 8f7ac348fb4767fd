import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realServer } from '../support/real-servers.js';
import { buildAuditDataset, type AuditDataset } from './audit-dataset.js';

/**
 * docs/read-models.md against the documents themselves: analysts query these collections
 * directly, so every top-level field a document has must be one the doc lists (a field that
 * appears unannounced is one nobody knows the meaning of), and the fields the doc promises for
 * this evening's data must be there. Keep this table in step with docs/read-models.md.
 */
const documented: Record<string, string[]> = {
  events: ['_id', 'eventId', 'clientId', 'title', 'startTime', 'endTime', 'active', 'timeZoneId', 'tags', 'customData', 'retentionDays', 'idAsSent', 'created', 'updated'],
  guests: [
    '_id', 'guestId', 'clientId', 'eventId', 'firstName', 'otherNames', 'lastName', 'email', 'plusOnes', 'admittedPlusOnes', 'additionalInfo', 'barcode',
    'tags', 'createdBy', 'admitted', 'blockedDate', 'blockedReason', 'validFrom', 'validTo', 'isGroup', 'discharged', 'image', 'customId',
    'commsTemplateId', 'correlationId', 'tagList', 'inside', 'lastNameLower', 'firstNameLower', 'emailLower', 'customIdLower', 'otherNamesLower', 'additionalInfoLower', 'barcodeTrimmed', 'created', 'updated',
    'ticketCode', 'ticketKeyId', 'ticketSerial', 'ticketIssuedAt', 'erased', 'erasedAt',
  ],
  scans: [
    '_id', 'clientId', 'eventId', 'guestId', 'result', 'reason', 'blockedReason', 'at', 'recordedAt', 'gate', 'device', 'nonce', 'scannedBy',
    'people', 'plusOnesAdmitted', 'annulled', 'annulledAt', 'forced', 'lookup',
  ],
  team_stats: ['_id', 'eventId', 'clientId', 'teamMemberId', 'username', 'checkedIn', 'checkedOut', 'activity'],
  event_stats: ['_id', 'clientId', 'eventId', 'rejected', 'gates', 'devices', 'annulled'],
  accounts: [
    '_id', 'email', 'userName', 'firstName', 'lastName', 'companyName', 'timeZoneId', 'customData', 'emailLower', 'userNameLower', 'passwordHash',
    'clientSecretHash', 'subscriptionKeys', 'commsApiEnabled', 'senderTrusted', 'retentionDays', 'sessionsValidAfter', 'created', 'updated',
  ],
  team_members: ['_id', 'teamMemberId', 'clientId', 'userName', 'userNameLower', 'email', 'firstName', 'lastName', 'canForce', 'passwordHash', 'idAsSent', 'created'],
  templates: ['_id', 'templateId', 'clientId', 'eventId', 'name', 'html', 'subject', 'fromAddress', 'fromName', 'replyTo', 'attachPdf', 'created'],
  invitations: [
    '_id', 'clientId', 'eventId', 'attendeeId', 'templateId', 'correlationId', 'status', 'attempts', 'to', 'provider', 'providerMessageId', 'error',
    'providerStatus', 'opens', 'skips', 'requestedAt', 'sentAt', 'updatedAt', 'history',
  ],
  comms_events: ['_id', 'clientId', 'type', 'createdAt', 'data', 'position'],
  timeline_minutes: ['_id', 'eventId', 'clientId', 'split', 'minute', 'admissions', 'admitted', 'exits', 'rejected', 'annulled', 'groups'],
  timeline_heads: ['_id', 'clientId', 'eventId', 'position'],
  funnel_invitations: ['_id', 'clientId', 'eventId', 'templateId', 'guestId', 'requestedAt', 'sentAt', 'failedAt', 'provider'],
  funnel_arrivals: ['_id', 'guestId', 'clientId', 'eventId', 'entries'],
};

const mongo = await realServer('mongo');
const stores: [string, Record<string, string>][] = [['embedded store', {}]];
if (mongo.url) stores.push(['MongoDB read store', { MONGO_URL: mongo.url, MONGO_DB: `readmodeldocs_${randomUUID().replaceAll('-', '').slice(0, 12)}` }]);
else describe.skip(`read models on MongoDB (skipped: ${mongo.skipReason})`, () => it('runs when MONGO_URL or a container runtime is available', () => {}));

describe.each(stores)('docs/read-models.md against the documents (%s)', (_name, env) => {
let data: AuditDataset;
const docs: Record<string, Record<string, unknown>[]> = {};

beforeAll(async () => {
  data = await buildAuditDataset(env);
  for (const name of Object.keys(documented)) {
    docs[name] = [];
    for await (const doc of data.service.platform.readStore.collection(name).stream({}, { readOnly: true })) docs[name]!.push(doc as Record<string, unknown>);
  }
}, 120_000);
afterAll(() => data?.service.close());

  it.each(Object.keys(documented))('%s: every field of every document is documented', (name) => {
    expect(docs[name]!.length, `${name} has documents for this evening`).toBeGreaterThan(0);
    const undocumented = new Set<string>();
    for (const doc of docs[name]!) for (const key of Object.keys(doc)) if (key !== '_pos' && !documented[name]!.includes(key)) undocumented.add(key);
    expect([...undocumented]).toEqual([]);
  });

  it('event_stats names its event and owner, so analysts can filter on them like team_stats', () => {
    const { alice, eventId } = data;
    expect(docs.event_stats).toEqual([
      expect.objectContaining({ _id: `${alice.id}:${eventId}`, clientId: alice.id, eventId, annulled: 1, rejected: { not_found: 1, blocked: 1 } }),
    ]);
  });

  it('the documented fields carry the documented values for this evening', () => {
    const { alice, eventId, ann, bo, cy, teamMemberId, attendeeInvitationId } = data;
    const guest = (id: string) => docs.guests!.find((g) => g.guestId === id)!;
    expect(guest(ann)).toMatchObject({ _id: `${alice.id}:${ann}`, clientId: alice.id, eventId, tags: 'VIP,press', tagList: ['vip', 'press'], lastName: 'Lee-Smith', lastNameLower: 'lee-smith', customIdLower: 'c-1', inside: false, ticketSerial: 2, admittedPlusOnes: 1 });
    expect(guest(bo)).toMatchObject({ blockedReason: 'duplicate ticket', inside: false, barcode: 'BC-2' });
    expect(guest(bo).admitted).toBeUndefined();
    expect(guest(cy)).toMatchObject({ erased: true, erasedAt: expect.stringMatching(/Z$/), tags: 'staff' });
    for (const field of ['firstName', 'lastName', 'email', 'customId', 'emailLower', 'customIdLower', 'firstNameLower', 'lastNameLower']) expect(guest(cy)[field], field).toBeUndefined();
    expect(docs.team_stats).toEqual([expect.objectContaining({ eventId, clientId: alice.id, teamMemberId, checkedIn: 2, checkedOut: 2 })]);
    const results = docs.scans!.map((s) => `${s.result}:${s.reason ?? ''}:${s.annulled ? 'annulled' : ''}`).sort();
    expect(results).toEqual(['admitted::', 'admitted::annulled', 'discharged::', 'rejected:blocked:', 'rejected:not_found:']);
    expect(docs.scans!.every((s) => (s.scannedBy as { id: string }).id === teamMemberId)).toBe(true);
    expect(docs.invitations).toEqual([expect.objectContaining({ _id: attendeeInvitationId, attendeeId: ann, status: 'sent', providerStatus: 'opened', opens: 1 })]);
    expect(docs.funnel_invitations).toEqual([expect.objectContaining({ _id: attendeeInvitationId, guestId: ann, provider: { delivered: expect.any(String), opened: expect.any(String) } })]);
    expect(docs.funnel_arrivals!.map((a) => [a.guestId, Object.keys(a.entries as object).length]).sort()).toEqual([[ann, 1], [bo, 0]].sort());
  });
});
