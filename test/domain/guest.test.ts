import { describe, expect, it } from 'vitest';
import { guestDecider, type GuestCommand, type GuestDetails, type GuestEvent, type ScanInfo } from '../../src/domain/guest.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(guestDecider);
const ids = { guestId: 'g1', eventId: 'e1' };
const registered = (fields: Record<string, unknown> = {}): GuestEvent => ({
  type: 'GuestRegistered',
  data: { ...ids, clientId: 'c1', tags: [], firstName: 'Ada', ...fields },
});
const scan = (fields: Partial<ScanInfo> = {}): ScanInfo => ({
  scanId: 's1',
  at: '2026-11-21T10:00:00.000Z',
  scannedBy: { id: 'tm1', username: 'door1' },
  ...fields,
});
// `scan` fields are laid over a whole scan (every scan has a scanner), the rest over the command.
const checkIn = ({ scan: scanFields, ...fields }: Record<string, unknown> = {}) => ({
  type: 'CheckIn' as const,
  force: false,
  recordedAt: '2026-11-21T10:00:00.000Z',
  ...fields,
  scan: scan(scanFields as Partial<ScanInfo>),
});
const admitted = (fields: Record<string, unknown> = {}): GuestEvent => ({
  type: 'GuestAdmitted',
  data: { ...ids, ...scan(), guestEntered: true, plusOnesAdmitted: 0, admittedPlusOnes: 0, people: 1, forced: false, recordedAt: '2026-11-21T10:00:00.000Z', ...fields },
});

describe('guest decider: check-in', () => {
  it('admits a registered guest', () =>
    given([registered()]).when(checkIn()).then([{ type: 'GuestAdmitted', data: { guestEntered: true, people: 1 } }]));

  it('admits every plus one of a group with the guest', () =>
    given([registered({ plusOnes: 3, isGroup: true })]).when(checkIn()).then([
      { type: 'GuestAdmitted', data: { plusOnesAdmitted: 3, admittedPlusOnes: 3, people: 4 } },
    ]));

  it('admits every plus one of a group with the guest, whatever count the scan names (spec: isGroup)', () => {
    given([registered({ plusOnes: 3, isGroup: true })]).when(checkIn({ plusOnes: 1 })).then([
      { type: 'GuestAdmitted', data: { guestEntered: true, plusOnesAdmitted: 3, admittedPlusOnes: 3, people: 4 } },
    ]);
    given([registered({ plusOnes: 3, isGroup: true })]).when(checkIn({ plusOnes: 0 })).then([
      { type: 'GuestAdmitted', data: { guestEntered: true, plusOnesAdmitted: 3, admittedPlusOnes: 3, people: 4 } },
    ]);
  });

  it('never admits more plus ones than plusOnes', () =>
    given([registered({ plusOnes: 2 })]).when(checkIn({ plusOnes: 9 })).then([
      { type: 'GuestAdmitted', data: { plusOnesAdmitted: 2, admittedPlusOnes: 2 } },
    ]));

  it('admits late plus ones on a second scan that says how many', () =>
    given([registered({ plusOnes: 2 }), admitted()]).when(checkIn({ plusOnes: 1 })).then([
      { type: 'GuestAdmitted', data: { guestEntered: false, plusOnesAdmitted: 1, admittedPlusOnes: 1, people: 1 } },
    ]));

  it('admits no phantom plus one: a second scan without plusOnes of a guest inside is already_admitted', () =>
    given([registered({ plusOnes: 2 }), admitted()]).when(checkIn()).then([
      { type: 'GuestScanRejected', data: { reason: 'already_admitted' } },
    ]));

  it('rejects a guest inside with no plus ones left: already_admitted', () =>
    given([registered(), admitted()]).when(checkIn()).then([{ type: 'GuestScanRejected', data: { reason: 'already_admitted' } }]));

  it('rejects a blocked guest with the reason, unless forced', () => {
    const blocked: GuestEvent = { type: 'GuestBlocked', data: { ...ids, reason: 'unpaid', at: '2026-11-20T00:00:00.000Z' } };
    given([registered(), blocked]).when(checkIn()).then([
      { type: 'GuestScanRejected', data: { reason: 'blocked', blockedReason: 'unpaid' } },
    ]);
    given([registered(), blocked]).when(checkIn({ force: true })).then([{ type: 'GuestAdmitted', data: { forced: true } }]);
    // Nothing to override: an ordinary admission, whatever flag the app sent.
    given([registered()]).when(checkIn({ force: true })).then([{ type: 'GuestAdmitted', data: { forced: false } }]);
    given([registered({ validTo: '2026-11-21T09:00:00.000Z' })]).when(checkIn({ force: true })).then([{ type: 'GuestAdmitted', data: { forced: true } }]);
  });

  it('a block of a guest blocked already keeps it unless it gives another reason', () => {
    const blocked: GuestEvent = { type: 'GuestBlocked', data: { ...ids, reason: 'fraud', at: '2026-11-20T00:00:00.000Z' } };
    given([registered(), blocked]).when({ type: 'Block', reason: '', at: '2026-11-21T00:00:00.000Z' }).then([]);
    given([registered(), blocked]).when({ type: 'Block', reason: 'fraud', at: '2026-11-21T00:00:00.000Z' }).then([]);
    given([registered(), blocked]).when({ type: 'Block', reason: 'refund', at: '2026-11-21T00:00:00.000Z' }).then([
      { type: 'GuestBlocked', data: { reason: 'refund' } },
    ]);
    given([registered()]).when({ type: 'Block', reason: '', at: '2026-11-21T00:00:00.000Z' }).then([{ type: 'GuestBlocked', data: { reason: '' } }]);
  });

  it('rejects before validFrom and after validTo, judged by the scan time', () => {
    given([registered({ validFrom: '2026-11-21T12:00:00.000Z' })]).when(checkIn()).then([
      { type: 'GuestScanRejected', data: { reason: 'not_yet_valid' } },
    ]);
    given([registered({ validTo: '2026-11-21T09:00:00.000Z' })]).when(checkIn()).then([
      { type: 'GuestScanRejected', data: { reason: 'expired' } },
    ]);
    given([registered({ validTo: '2026-11-21T09:00:00.000Z' })])
      .when(checkIn({ scan: { at: '2026-11-21T08:59:00.000Z' } }))
      .then([{ type: 'GuestAdmitted' }]);
  });

  it('lets a discharged guest in again', () =>
    given([
      registered(),
      admitted(),
      { type: 'GuestDischarged', data: { ...ids, ...scan({ scanId: 's2' }), people: 1 } },
    ]).when(checkIn({ scan: { scanId: 's3' } })).then([{ type: 'GuestAdmitted', data: { guestEntered: true } }]));

  it('changes nothing for a nonce it has seen', () =>
    given([registered({ plusOnes: 1 }), admitted({ nonce: 'n1' })]).when(checkIn({ scan: { nonce: 'n1' } })).then([]));

  it('a check-in made before the last check-out, by more than the device clock skew, admits no one; within it, a re-entry admits', () => {
    const left = [registered(), admitted(), { type: 'GuestDischarged' as const, data: { ...ids, ...scan({ scanId: 's2', at: '2026-11-21T12:00:00.000Z' }), people: 1 } }];
    given(left).when(checkIn({ scan: { scanId: 's3', at: '2026-11-21T11:54:59.000Z' } })).then([{ type: 'GuestScanRejected', data: { reason: 'already_admitted' } }]);
    given(left).when(checkIn({ scan: { scanId: 's3', at: '2026-11-21T11:57:00.000Z' } })).then([{ type: 'GuestAdmitted', data: { guestEntered: true } }]);
  });

  it('a nonce is the retry key of one scan: not of a check-out, nor of another scanner or device', () => {
    const seen = [registered(), admitted({ nonce: 'n1', device: 'd1' })];
    given(seen).when({ type: 'CheckOut', scan: scan({ scanId: 's2', nonce: 'n1', device: 'd1' }) }).then([{ type: 'GuestDischarged' }]);
    given(seen).when(checkIn({ scan: { scanId: 's2', nonce: 'n1', device: 'd2' } })).then([
      { type: 'GuestScanRejected', data: { reason: 'already_admitted' } },
    ]);
    given(seen).when(checkIn({ scan: { scanId: 's2', nonce: 'n1', device: 'd1', scannedBy: { id: 'tm2', username: 'door2' } } })).then([
      { type: 'GuestScanRejected', data: { reason: 'already_admitted' } },
    ]);
    given(seen).when(checkIn({ scan: { nonce: 'n1', device: 'd1' } })).then([]);
  });
});

describe('guest decider: undo, check-out, upsert', () => {
  it('annuls the last check-in inside the window, restoring the state before it', () =>
    given([registered(), admitted()])
      .when({ type: 'AnnulCheckIn', scanId: 's1', now: '2026-11-21T10:04:00.000Z', undoWindowMs: 300_000, annulledBy: 'tm1' })
      .then([{ type: 'GuestAdmissionAnnulled', data: { scanId: 's1', people: 1, restored: { inside: false, admittedPlusOnes: 0 } } }]));

  it('an undo of a re-admission restores the plus ones the guest had before it', () =>
    given([
      registered({ plusOnes: 2 }),
      admitted({ plusOnesAdmitted: 1, admittedPlusOnes: 1, people: 2 }),
      { type: 'GuestDischarged', data: { ...ids, ...scan({ scanId: 's2' }), people: 2 } },
      admitted({ scanId: 's3', plusOnesAdmitted: 2, admittedPlusOnes: 2, people: 3 }),
    ])
      .when({ type: 'AnnulCheckIn', scanId: 's3', now: '2026-11-21T10:04:00.000Z', undoWindowMs: 300_000, annulledBy: 'tm1' })
      .then([{ type: 'GuestAdmissionAnnulled', data: { scanId: 's3', people: 3, restored: { inside: false, admittedPlusOnes: 1 } } }]));

  it('after an undo, the check-in before it (still in the window) can be undone too', () =>
    given([
      registered({ plusOnes: 2 }),
      admitted(),
      admitted({ scanId: 's2', guestEntered: false, plusOnesAdmitted: 1, admittedPlusOnes: 1, people: 1 }),
      {
        type: 'GuestAdmissionAnnulled',
        data: {
          ...ids, scanId: 's2', at: '2026-11-21T10:01:00.000Z', people: 1, scannedBy: scan().scannedBy, annulledBy: 'tm1',
          admittedAt: '2026-11-21T10:00:00.000Z', restored: { admitted: '2026-11-21T10:00:00.000Z', inside: true, admittedPlusOnes: 0 },
        },
      },
    ])
      .when({ type: 'AnnulCheckIn', latest: true, now: '2026-11-21T10:04:00.000Z', undoWindowMs: 300_000, annulledBy: 'tm1' })
      .then([{ type: 'GuestAdmissionAnnulled', data: { scanId: 's1', people: 1, restored: { inside: false, admittedPlusOnes: 0 } } }]));

  it('refuses an undo after the window', () =>
    given([registered(), admitted()])
      .when({ type: 'AnnulCheckIn', scanId: 's1', now: '2026-11-21T10:06:00.000Z', undoWindowMs: 300_000, annulledBy: 'tm1' })
      .thenFails('undo_window_passed'));

  it('records a check-out of a guest not inside as an exit whose check-in is not synced yet', () =>
    given([registered()]).when({ type: 'CheckOut', scan: scan() }).then([{ type: 'GuestDischarged', data: { people: 1, entryUnknown: true } }]));

  it('closes such an exit with the check-in made before it: the guest stays out, the exit gains the plus ones', () => {
    const exit: GuestEvent = { type: 'GuestDischarged', data: { ...ids, ...scan({ scanId: 'out', at: '2026-11-21T12:00:00.000Z' }), people: 1, entryUnknown: true } };
    given([registered({ plusOnes: 2 }), exit])
      .when(checkIn({ plusOnes: 2, scan: { scanId: 'in', at: '2026-11-21T10:00:00.000Z' } }))
      .then([
        {
          type: 'GuestAdmitted',
          data: { guestEntered: true, plusOnesAdmitted: 2, admittedPlusOnes: 2, people: 3, closesExit: { scanId: 'out', at: '2026-11-21T12:00:00.000Z', people: 2, latest: true } },
        },
      ]);
    // A check-in after that exit (beyond the clock skew) is a new visit.
    given([registered(), exit]).when(checkIn({ scan: { at: '2026-11-21T12:06:00.000Z' } })).then([{ type: 'GuestAdmitted', data: { guestEntered: true, people: 1 } }]);
  });

  it('keeps every exit that waits for its check-in: of two visits synced exits first, each check-in closes its own visit', () => {
    const exit = (scanId: string, at: string): GuestEvent => ({ type: 'GuestDischarged', data: { ...ids, ...scan({ scanId, at }), people: 1, entryUnknown: true } });
    const exits = [registered(), exit('o1', '2026-11-21T10:03:00.000Z'), exit('o2', '2026-11-21T10:23:00.000Z')];
    // The first visit's check-in closes the first exit (the second waits for the second visit's check-in).
    given(exits)
      .when(checkIn({ scan: { scanId: 'i1', at: '2026-11-21T10:00:00.000Z' } }))
      .then([{ type: 'GuestAdmitted', data: { scanId: 'i1', closesExit: { scanId: 'o1' } } }]);
    const firstClosed: GuestEvent = { ...admitted({ scanId: 'i1', at: '2026-11-21T10:00:00.000Z', closesExit: { scanId: 'o1', at: '2026-11-21T10:03:00.000Z', scannedBy: scan().scannedBy, people: 0, latest: true } }) };
    given([...exits, firstClosed])
      .when(checkIn({ scan: { scanId: 'i2', at: '2026-11-21T10:20:00.000Z' } }))
      .then([{ type: 'GuestAdmitted', data: { scanId: 'i2', closesExit: { scanId: 'o2' } } }]);
    // Either check-in first: the other still finds its exit.
    given(exits)
      .when(checkIn({ scan: { scanId: 'i2', at: '2026-11-21T10:20:00.000Z' } }))
      .then([{ type: 'GuestAdmitted', data: { scanId: 'i2', closesExit: { scanId: 'o2' } } }]);
    const secondClosed: GuestEvent = { ...admitted({ scanId: 'i2', at: '2026-11-21T10:20:00.000Z', closesExit: { scanId: 'o2', at: '2026-11-21T10:23:00.000Z', scannedBy: scan().scannedBy, people: 0, latest: true } }) };
    given([...exits, secondClosed])
      .when(checkIn({ scan: { scanId: 'i1', at: '2026-11-21T10:00:00.000Z' } }))
      .then([{ type: 'GuestAdmitted', data: { scanId: 'i1', closesExit: { scanId: 'o1', latest: false } } }]);
  });

  it('rejects a second exit scan of a visit already checked out (within the clock skew of that check-out): already_discharged, recorded', () =>
    given([registered(), admitted(), { type: 'GuestDischarged', data: { ...ids, ...scan({ scanId: 'o1', at: '2026-11-21T11:00:00.000Z' }), people: 1 } }])
      .when({ type: 'CheckOut', scan: scan({ scanId: 'o2', at: '2026-11-21T11:04:00.000Z' }) })
      .then([{ type: 'GuestScanRejected', data: { scanId: 'o2', reason: 'already_discharged', direction: 'out' } }]));

  it('merges details and tags without touching admission (spec rule 3)', () =>
    given([registered({ tags: ['a'] }), admitted()])
      .when({ type: 'MergeGuest', invitationId: 'i1', guestId: 'g1', clientId: 'c1', eventId: 'e1', details: { lastName: 'L' }, tags: ['b'], replaceTags: false })
      .then([
        { type: 'GuestDetailsChanged', data: { changes: { lastName: 'L' } } },
        { type: 'GuestTagsChanged', data: { tags: ['a', 'b'] } },
      ]));

  it('replaces tags when asked', () =>
    given([registered({ tags: ['a'] })])
      .when({ type: 'MergeGuest', invitationId: 'i1', guestId: 'g1', clientId: 'c1', eventId: 'e1', details: {}, tags: ['b'], replaceTags: true })
      .then([{ type: 'GuestTagsChanged', data: { tags: ['b'] } }]));

  it('reports another client’s guest as not found on upsert', () =>
    given([registered()])
      .when({ type: 'MergeGuest', invitationId: 'i1', guestId: 'g1', clientId: 'c2', eventId: 'e1', details: {}, replaceTags: false })
      .thenFails('not_found'));

  it('requests an invitation when a guest is created naming a template (spec: check-in rule 1)', () =>
    given([])
      .when({ type: 'RegisterGuest', guestId: 'g1', clientId: 'c1', eventId: 'e1', tags: [], invitationId: 'i1', details: { commsTemplateId: 't1', correlationId: 'crm-7' } })
      .then([
        { type: 'GuestRegistered' },
        { type: 'InvitationRequested', data: { attendeeInvitationId: 'i1', templateId: 't1', correlationId: 'crm-7' } },
      ]));

  it('requests an invitation when an upsert names another template, not when it repeats the same one', () => {
    const withTemplate = registered({ commsTemplateId: 't1' });
    const merge = (templateId: string) =>
      ({ type: 'MergeGuest', invitationId: 'i2', guestId: 'g1', clientId: 'c1', eventId: 'e1', details: { commsTemplateId: templateId }, replaceTags: false }) as const;
    given([withTemplate]).when(merge('t1')).then([]);
    given([withTemplate]).when(merge('t2')).then([
      { type: 'GuestDetailsChanged', data: { changes: { commsTemplateId: 't2' } } },
      { type: 'InvitationRequested', data: { templateId: 't2', attendeeInvitationId: 'i2' } },
    ]);
  });

  it('requests an invitation without an email as such (noEmail: it fails no_email whatever email the guest has when it is sent)', () =>
    given([])
      .when({ type: 'RegisterGuest', guestId: 'g1', clientId: 'c1', eventId: 'e1', tags: [], invitationId: 'i1', details: { commsTemplateId: 't1' } })
      .then([{ type: 'GuestRegistered' }, { type: 'InvitationRequested', data: { attendeeInvitationId: 'i1', templateId: 't1', noEmail: true } }]));

  it('requests the same template again once the guest has the email its last invitation lacked, and only then', () => {
    const merge = (details: GuestDetails) =>
      ({ type: 'MergeGuest', invitationId: 'i2', guestId: 'g1', clientId: 'c1', eventId: 'e1', details, replaceTags: false }) as const;
    const lacked: GuestEvent = { type: 'InvitationRequested', data: { ...ids, attendeeInvitationId: 'i1', templateId: 't1', noEmail: true } };
    const sentToEmail: GuestEvent = { type: 'InvitationRequested', data: { ...ids, attendeeInvitationId: 'i1', templateId: 't1' } };
    given([registered({ commsTemplateId: 't1' }), lacked])
      .when(merge({ commsTemplateId: 't1', email: 'ada@example.com' }))
      .then([
        { type: 'GuestDetailsChanged', data: { changes: { email: 'ada@example.com' } } },
        { type: 'InvitationRequested', data: { templateId: 't1', attendeeInvitationId: 'i2' } },
      ]);
    // The email in one record, the template named again in a later one.
    given([registered({ commsTemplateId: 't1' }), lacked, { type: 'GuestDetailsChanged', data: { ...ids, changes: { email: 'ada@example.com' } } }])
      .when(merge({ commsTemplateId: 't1' }))
      .then([{ type: 'InvitationRequested', data: { templateId: 't1', attendeeInvitationId: 'i2' } }]);
    // Not without the template in the record, not while there is still no email, not when the last invitation had one.
    given([registered({ commsTemplateId: 't1' }), lacked]).when(merge({ email: 'ada@example.com' })).then([
      { type: 'GuestDetailsChanged', data: { changes: { email: 'ada@example.com' } } },
    ]);
    given([registered({ commsTemplateId: 't1' }), lacked]).when(merge({ commsTemplateId: 't1', firstName: 'Ad' })).then([
      { type: 'GuestDetailsChanged', data: { changes: { firstName: 'Ad' } } },
    ]);
    given([registered({ commsTemplateId: 't1', email: 'old@example.com' }), sentToEmail]).when(merge({ commsTemplateId: 't1', email: 'ada@example.com' })).then([
      { type: 'GuestDetailsChanged', data: { changes: { email: 'ada@example.com' } } },
    ]);
  });

  it('requests an invitation for an email that is not an address as such (invalidEmail), and again once the email is another, once', () => {
    given([])
      .when({ type: 'RegisterGuest', guestId: 'g1', clientId: 'c1', eventId: 'e1', tags: [], invitationId: 'i1', details: { email: 'ada@', commsTemplateId: 't1' } })
      .then([{ type: 'GuestRegistered' }, { type: 'InvitationRequested', data: { attendeeInvitationId: 'i1', templateId: 't1', invalidEmail: true } }]);
    const merge = (details: GuestDetails) =>
      ({ type: 'MergeGuest', invitationId: 'i2', guestId: 'g1', clientId: 'c1', eventId: 'e1', details, replaceTags: false }) as const;
    const wrong: GuestEvent = { type: 'InvitationRequested', data: { ...ids, attendeeInvitationId: 'i1', templateId: 't1', invalidEmail: true } };
    const history = [registered({ commsTemplateId: 't1', email: 'ada@' }), wrong];
    given(history)
      .when(merge({ commsTemplateId: 't1', email: 'ada@example.com' }))
      .then([
        { type: 'GuestDetailsChanged', data: { changes: { email: 'ada@example.com' } } },
        { type: 'InvitationRequested', data: { templateId: 't1', attendeeInvitationId: 'i2' } },
      ]);
    // The same record again (a sync repeating it) requests nothing: the email is still the one that failed.
    given(history).when(merge({ commsTemplateId: 't1', email: 'ada@' })).then([]);
    // Corrected in one record, the template named again in a later one.
    given([...history, { type: 'GuestDetailsChanged', data: { ...ids, changes: { email: 'ada@example.com' } } }])
      .when(merge({ commsTemplateId: 't1' }))
      .then([{ type: 'InvitationRequested', data: { templateId: 't1', attendeeInvitationId: 'i2' } }]);
    // Corrected to another wrong text: requested again, as such (it fails invalid_email and says so).
    given(history)
      .when(merge({ commsTemplateId: 't1', email: 'ada@@example' }))
      .then([
        { type: 'GuestDetailsChanged', data: { changes: { email: 'ada@@example' } } },
        { type: 'InvitationRequested', data: { templateId: 't1', attendeeInvitationId: 'i2', invalidEmail: true } },
      ]);
  });

  const register = (fields: Partial<Extract<GuestCommand, { type: 'RegisterGuest' }>> = {}): GuestCommand => ({
    type: 'RegisterGuest',
    guestId: 'g1',
    clientId: 'c1',
    eventId: 'e1',
    tags: [],
    invitationId: 'i1',
    details: { firstName: 'Ada' },
    ...fields,
  });

  it('records an admission state a create brings as its own events (an import)', () =>
    given([])
      .when(register({ imported: { admitted: '2026-11-21T09:00:00.000Z', admittedPlusOnes: 1, blockedReason: 'no re-entry', receivedAt: '2026-11-21T10:00:00.000Z' } }))
      .then([
        { type: 'GuestRegistered' },
        { type: 'GuestAdmissionImported', data: { admitted: '2026-11-21T09:00:00.000Z', admittedPlusOnes: 1, inside: true } },
        { type: 'GuestBlocked', data: { reason: 'no re-entry', at: '2026-11-21T10:00:00.000Z' } },
      ]));

  it('an imported check-out after the admission leaves the guest outside', () =>
    given([])
      .when(register({ imported: { admitted: '2026-11-21T09:00:00.000Z', discharged: '2026-11-21T11:00:00.000Z' } }))
      .then([{ type: 'GuestRegistered' }, { type: 'GuestAdmissionImported', data: { inside: false, discharged: '2026-11-21T11:00:00.000Z' } }]));

  it('a create retried with the same content decides nothing; other content is a conflict', () => {
    const first = registered({ createdBy: 'c1' });
    given([first]).when(register({ details: { firstName: 'Ada', createdBy: 'c1' } })).then([]);
    given([first]).when(register({ details: { firstName: 'Eve', createdBy: 'c1' } })).thenFails('guest_exists');
    given([first]).when(register({ details: { firstName: 'Ada', createdBy: 'c1' }, imported: { admitted: '2026-11-21T09:00:00.000Z' } })).thenFails('guest_exists');
  });

  it('upsert never rewrites createdBy: who created the guest is a fact of the create', () => {
    const merge = (details: GuestDetails): GuestCommand => ({ type: 'MergeGuest', invitationId: 'i1', guestId: 'g1', clientId: 'c1', eventId: 'e1', details, replaceTags: false });
    given([registered({ createdBy: 'c1' })]).when(merge({ createdBy: 'crm-sync' })).then([]);
    const [changed] = guestDecider.decide(merge({ createdBy: 'crm-sync', lastName: 'King' }), guestDecider.evolve(guestDecider.initialState(), registered({ createdBy: 'c1' })));
    expect(changed).toMatchObject({ type: 'GuestDetailsChanged' });
    expect((changed!.data as { changes: unknown }).changes).toEqual({ lastName: 'King' });
  });

  it('decides nothing for an upsert that changes nothing', () =>
    given([registered()])
      .when({ type: 'MergeGuest', invitationId: 'i1', guestId: 'g1', clientId: 'c1', eventId: 'e1', details: { firstName: 'Ada' }, replaceTags: false })
      .then([]));
});

describe('guest decider: signed tickets (issue 16)', () => {
  const ticket = (serial = 1) => ({ code: `T1.code-${serial}`, keyId: 'k1', serial, at: '2026-11-21T09:00:00.000Z' });
  const issued = (serial = 1): GuestEvent => ({ type: 'TicketIssued', data: { ...ids, ...ticket(serial), reissued: serial > 1 } });
  const register = (details: Record<string, unknown> = {}): GuestCommand => ({
    type: 'RegisterGuest', ...ids, clientId: 'c1', details: { firstName: 'Ada', ...details }, tags: [], invitationId: 'i1', ticket: ticket(),
  });
  const merge = (details: Record<string, unknown> = {}): GuestCommand => ({
    type: 'MergeGuest', ...ids, clientId: 'c1', details, replaceTags: false, invitationId: 'i2', ticket: ticket(),
  });

  it('issues a ticket to a guest registered without a barcode, none with one', () => {
    given([]).when(register()).then([{ type: 'GuestRegistered' }, { type: 'TicketIssued', data: { serial: 1, reissued: false } }]);
    given([]).when(register({ barcode: 'B1' })).then([{ type: 'GuestRegistered' }]);
  });

  it('upsert never changes an issued ticket, and does not replace a revoked one', () => {
    given([registered(), issued()]).when(merge({ firstName: 'Ann' })).then([{ type: 'GuestDetailsChanged' }]);
    const revoked: GuestEvent = { type: 'TicketRevoked', data: { ...ids, serial: 1, keyId: 'k1', at: 'x', by: 'c1', reissue: false } };
    given([registered(), issued(), revoked]).when(merge({ firstName: 'Ann' })).then([{ type: 'GuestDetailsChanged' }]);
  });

  it('upsert issues a first ticket to a guest without a barcode that never had one', () =>
    given([registered()]).when(merge({ firstName: 'Ann' })).then([{ type: 'GuestDetailsChanged' }, { type: 'TicketIssued', data: { serial: 1 } }]));

  it('reissue revokes the valid ticket and issues the next serial; a stale serial is a conflict', () => {
    given([registered(), issued()]).when({ type: 'ReissueTicket', ticket: ticket(2), at: 'now', by: 'c1' }).then([
      { type: 'TicketRevoked', data: { serial: 1, reissue: true, by: 'c1' } },
      { type: 'TicketIssued', data: { serial: 2, reissued: true } },
    ]);
    given([registered(), issued(), issued(2)]).when({ type: 'ReissueTicket', ticket: ticket(2), at: 'now', by: 'c1' }).thenFails('ticket_changed');
  });

  it('a scanned ticket that is not the valid one is rejected as revoked, even forced', () => {
    given([registered(), issued(), issued(2)]).when(checkIn({ ticketSerial: 1, force: true })).then([
      { type: 'GuestScanRejected', data: { reason: 'revoked' } },
    ]);
    given([registered(), issued(), issued(2)]).when(checkIn({ ticketSerial: 2 })).then([{ type: 'GuestAdmitted' }]);
  });

  it('revoke without a valid ticket is refused', () =>
    given([registered()]).when({ type: 'RevokeTicket', at: 'now', by: 'c1' }).thenFails('no_ticket'));
});

describe('guest decider: erasure (issue 14)', () => {
  const erase: GuestCommand = { type: 'Erase', erasedBy: 'c1', reason: 'GDPR request', at: '2026-11-22T10:00:00.000Z' };
  const erased: GuestEvent = { type: 'GuestErased', data: { ...ids, erasedBy: 'c1', reason: 'GDPR request', at: '2026-11-22T10:00:00.000Z' } };

  it('records who erased the guest and why, without personal data', () =>
    given([registered({ email: 'ada@example.com' })]).when(erase).then([
      { type: 'GuestErased', data: { ...ids, erasedBy: 'c1', reason: 'GDPR request', at: '2026-11-22T10:00:00.000Z' } },
    ]));

  it('an erased guest is erased again without a new event (idempotent)', () => given([registered(), erased]).when(erase).then([]));

  it('an erased guest takes no other command: not found', () =>
    given([registered(), erased]).when(checkIn()).thenFails('guest_erased'));

  it('an erased guest keeps its non-personal details and loses the personal ones', () => {
    const state = [registered({ lastName: 'Lovelace', plusOnes: 2 }), erased].reduce(guestDecider.evolve, guestDecider.initialState());
    expect(state.details).toEqual({ plusOnes: 2 });
    expect(state.erased).toEqual({ at: '2026-11-22T10:00:00.000Z', by: 'c1', reason: 'GDPR request' });
  });
});
