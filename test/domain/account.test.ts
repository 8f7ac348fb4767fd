import { describe, it } from 'vitest';
import { accountDecider, type AccountEvent } from '../../src/domain/account.js';
import { eventDecider } from '../../src/domain/event.js';
import { reservationDecider } from '../../src/domain/reservation.js';
import { deciderSpec } from '../support/decider-spec.js';

const registered: AccountEvent = {
  type: 'AccountRegistered',
  data: {
    clientId: 'c1',
    email: 'a@example.com',
    userName: 'a@example.com',
    passwordHash: 'h',
    clientSecretHash: 's',
    commsApiEnabled: false,
    senderTrusted: false,
  },
};

describe('account decider', () => {
  const given = deciderSpec(accountDecider);
  it('records a password change only when the old password matched', () => {
    const change = { type: 'ChangePassword' as const, clientId: 'c1', newPasswordHash: 'n', signOutAllSessions: true, at: 't' };
    given([registered]).when({ ...change, oldPasswordMatches: true }).then([
      { type: 'PasswordChanged', data: { signOutAllSessions: true, changedAt: 't' } },
    ]);
    given([registered]).when({ ...change, oldPasswordMatches: false }).thenFails('invalid_old_password');
  });
  it('switches comms access and trust only when they change', () => {
    given([registered]).when({ type: 'SetAccess', clientId: 'c1', commsApiEnabled: true, senderTrusted: false }).then([
      { type: 'CommsApiEnabled' },
    ]);
  });
  it('refuses to revoke a key the account does not have', () =>
    given([registered]).when({ type: 'RevokeSubscriptionKey', clientId: 'c1', keyId: 'k' }).thenFails('not_found'));
  it('reports an unknown account as not found', () =>
    given([]).when({ type: 'SetAccess', clientId: 'c1', commsApiEnabled: true }).thenFails('not_found'));
});

describe('reservation decider', () => {
  const given = deciderSpec(reservationDecider);
  it('gives a free key to the first owner and refuses the second', () => {
    given([]).when({ type: 'Reserve', key: 'door1', ownerType: 'team_member', ownerId: 'a' }).then([{ type: 'KeyReserved' }]);
    given([{ type: 'KeyReserved', data: { key: 'door1', ownerType: 'team_member', ownerId: 'a' } }])
      .when({ type: 'Reserve', key: 'door1', ownerType: 'team_member', ownerId: 'b' })
      .thenFails('already_taken');
  });
  it('frees a released key', () =>
    given([
      { type: 'KeyReserved', data: { key: 'k', ownerType: 'x', ownerId: 'a' } },
      { type: 'KeyReleased', data: { key: 'k', ownerId: 'a' } },
    ])
      .when({ type: 'Reserve', key: 'k', ownerType: 'x', ownerId: 'b' })
      .then([{ type: 'KeyReserved', data: { ownerId: 'b' } }]));
});

describe('event decider', () => {
  const given = deciderSpec(eventDecider);
  const details = { title: 'T', startTime: '2026-01-01T10:00:00.000Z', endTime: '2026-01-01T12:00:00.000Z' };
  it('refuses an end before the start', () =>
    given([]).when({ type: 'SaveEvent', eventId: 'e', clientId: 'c', details: { ...details, endTime: details.startTime } }).thenFails('validation_error'));
  it('reports another client’s event as not found on update', () =>
    given([{ type: 'EventCreated', data: { eventId: 'e', clientId: 'c', ...details } }])
      .when({ type: 'SaveEvent', eventId: 'e', clientId: 'other', details })
      .thenFails('not_found'));
  it('decides nothing when nothing changes', () =>
    given([{ type: 'EventCreated', data: { eventId: 'e', clientId: 'c', ...details } }])
      .when({ type: 'SaveEvent', eventId: 'e', clientId: 'c', details })
      .then([]));
});
