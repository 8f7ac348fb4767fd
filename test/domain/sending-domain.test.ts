import { describe, it } from 'vitest';
import type { AuthenticatedDomain } from '../../src/adapters/domains/port.js';
import { sendingDomainDecider, type SendingDomainEvent } from '../../src/domain/sending-domain.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(sendingDomainDecider);
const at = '2026-11-22T10:00:00.000Z';
const records = [{ purpose: 'mail_cname', type: 'cname' as const, host: 'em1.example.com', data: 'u1.wl.sendgrid.net', valid: false }];
const setup = { provider: 'sendgrid', providerId: '42', domain: 'example.com', subdomain: 'em1', records, sendingAddress: 'invites@example.com' };
const configured: SendingDomainEvent = { type: 'DomainConfigured', data: { clientId: 'c1', at, ...setup } };
const checked = (valid: boolean): SendingDomainEvent => ({ type: 'DomainVerificationChecked', data: { clientId: 'c1', valid, records, at } });
const activated: SendingDomainEvent = { type: 'CustomDomainActivated', data: { clientId: 'c1', automatic: true, at } };
const result = (valid: boolean): AuthenticatedDomain => ({ providerId: '42', domain: 'example.com', subdomain: 'em1', valid, records });
const verify = (valid: boolean) => ({ type: 'RecordVerification' as const, clientId: 'c1', result: result(valid), at });
const activate = { type: 'ActivateCustomDomain' as const, clientId: 'c1', at };
const deactivate = { type: 'DeactivateCustomDomain' as const, clientId: 'c1', at };

describe('sending domain decider (spec: Domain authentication record, States and transitions)', () => {
  it('configures one domain per client; a second create is 409 domain_already_configured', () => {
    given([]).when({ type: 'ConfigureDomain', clientId: 'c1', setup, at }).then([{ type: 'DomainConfigured', data: { domain: 'example.com' } }]);
    given([configured]).when({ type: 'ConfigureDomain', clientId: 'c1', setup, at }).thenFails('domain_already_configured');
  });

  it('enables the custom domain automatically on the first successful verify, and only then', () => {
    given([configured]).when(verify(false)).then([{ type: 'DomainVerificationChecked', data: { valid: false } }]);
    given([configured, checked(false)]).when(verify(true)).then([
      { type: 'DomainVerificationChecked', data: { valid: true } },
      { type: 'CustomDomainActivated', data: { automatic: true } },
    ]);
    given([configured, checked(true), activated, { type: 'CustomDomainDeactivated', data: { clientId: 'c1', at } }])
      .when(verify(true))
      .then([{ type: 'DomainVerificationChecked', data: { valid: true } }]);
  });

  it('refuses activate before any successful verify (409 domain_not_verified), also with no domain at all', () => {
    given([configured, checked(false)]).when(activate).thenFails('domain_not_verified');
    given([]).when(activate).thenFails('domain_not_verified');
  });

  it('activates after a deactivate without re-verifying; a repeated switch records nothing', () => {
    const deactivated: SendingDomainEvent = { type: 'CustomDomainDeactivated', data: { clientId: 'c1', at } };
    given([configured, checked(true), activated]).when(deactivate).then([{ type: 'CustomDomainDeactivated' }]);
    given([configured, checked(true), activated, deactivated]).when(activate).then([{ type: 'CustomDomainActivated', data: { automatic: false } }]);
    given([configured, checked(true), activated]).when(activate).then([]);
    given([configured]).when(deactivate).then([]);
  });

  it('reports verify and deactivate without a domain as not found', () => {
    given([]).when(verify(true)).thenFails('not_found');
    given([]).when(deactivate).thenFails('not_found');
  });
});
