import { DomainError, type Decider } from './decider.js';

/*
 * A client's custom sending domain (spec: Domain authentication record, the domain rows of
 * States and transitions, Comms rule 5): `domain-<clientId>`. Its decider answers "may sends
 * use the custom domain now?" (EnableCustomDomain).
 */

/*
 * What the domain-authentication port (src/adapters/domains/port.ts) answers with, declared here
 * because the decider records it.
 */

/** One DNS record the client must publish; `valid` once the provider (or the lookup) sees it. */
export interface DnsRecord {
  /** What the record is for, e.g. `mail_cname`, `dkim1`, `dkim2` (SendGrid's names). */
  purpose: string;
  type: 'cname' | 'txt' | 'mx';
  host: string;
  data: string;
  valid: boolean;
  /** Why the provider found it not valid at the last check (SendGrid's validation `reason`), when it said. */
  reason?: string;
}

export interface AuthenticatedDomain {
  /** The provider's id of the domain authentication record. */
  providerId: string;
  domain: string;
  subdomain: string;
  /** All records valid, as of the last check. */
  valid: boolean;
  records: DnsRecord[];
}

export interface DomainSetup {
  provider: string;
  providerId: string;
  domain: string;
  subdomain: string;
  records: DnsRecord[];
  /** The From of sends while the custom domain is enabled (templates may still name their own). */
  sendingAddress: string;
}

export type SendingDomainEvent =
  | { type: 'DomainConfigured'; data: { clientId: string; at: string } & DomainSetup }
  /**
   * A create at the provider whose answer never came (a timeout, a gateway error): it may have
   * created the domain. The client's retry may adopt what it left (a lost create of its own only).
   */
  | { type: 'DomainCreateUnanswered'; data: { clientId: string; domain: string; subdomain: string; at: string } }
  | { type: 'DomainVerificationChecked'; data: { clientId: string; valid: boolean; records: DnsRecord[]; at: string } }
  /** `automatic`: set by the first successful verify (spec), not by an activate call. */
  | { type: 'CustomDomainActivated'; data: { clientId: string; automatic: boolean; at: string } }
  | { type: 'CustomDomainDeactivated'; data: { clientId: string; at: string } };

export type SendingDomainCommand =
  | { type: 'ConfigureDomain'; clientId: string; setup: DomainSetup; at: string }
  | { type: 'RecordUnansweredCreate'; clientId: string; domain: string; subdomain: string; at: string }
  | { type: 'RecordVerification'; clientId: string; result: AuthenticatedDomain; at: string }
  | { type: 'ActivateCustomDomain'; clientId: string; at: string }
  | { type: 'DeactivateCustomDomain'; clientId: string; at: string };

export type SendingDomainState =
  /** `unanswered`: `<subdomain>.<domain>` of this client's creates that got no answer. */
  | { status: 'none'; unanswered: string[] }
  | { status: 'configured'; everVerified: boolean; enabled: boolean };

/** Whether this client's own create of `subdomain`.`domain` went unanswered (so its retry may adopt what it left). */
export const createWentUnanswered = (state: SendingDomainState, domain: string, subdomain: string): boolean =>
  state.status === 'none' && state.unanswered.includes(`${subdomain}.${domain}`);

export const sendingDomainStream = (clientId: string): string => `domain-${clientId}`;

const noDomain = () => new DomainError('not_found', 'no custom sending domain is configured');

export const sendingDomainDecider: Decider<SendingDomainState, SendingDomainCommand, SendingDomainEvent> = {
  initialState: () => ({ status: 'none', unanswered: [] }),

  evolve(state, event) {
    if (event.type === 'DomainConfigured') return { status: 'configured', everVerified: false, enabled: false };
    if (state.status === 'none') {
      return event.type === 'DomainCreateUnanswered' ? { ...state, unanswered: [...state.unanswered, `${event.data.subdomain}.${event.data.domain}`] } : state;
    }
    switch (event.type) {
      case 'DomainCreateUnanswered':
        return state;
      case 'DomainVerificationChecked':
        return { ...state, everVerified: state.everVerified || event.data.valid };
      case 'CustomDomainActivated':
        return { ...state, enabled: true };
      case 'CustomDomainDeactivated':
        return { ...state, enabled: false };
    }
  },

  decide(command, state) {
    const { clientId, at } = command;
    if (command.type === 'ConfigureDomain') {
      if (state.status !== 'none') {
        throw new DomainError('conflict', 'a custom sending domain is already configured', { code: 'domain_already_configured' });
      }
      return [{ type: 'DomainConfigured', data: { clientId, at, ...command.setup } }];
    }
    if (command.type === 'RecordUnansweredCreate') {
      const { domain, subdomain } = command;
      if (state.status !== 'none' || state.unanswered.includes(`${subdomain}.${domain}`)) return [];
      return [{ type: 'DomainCreateUnanswered', data: { clientId, domain, subdomain, at } }];
    }
    if (command.type === 'ActivateCustomDomain') {
      // Rule 5: without a successful verify (or without a domain at all) there is nothing verified to activate.
      if (state.status === 'none' || !state.everVerified) {
        throw new DomainError('conflict', 'the domain has not been verified yet: publish its DNS records, then call verify', {
          code: 'domain_not_verified',
        });
      }
      return state.enabled ? [] : [{ type: 'CustomDomainActivated', data: { clientId, automatic: false, at } }];
    }
    if (state.status === 'none') throw noDomain();
    if (command.type === 'DeactivateCustomDomain') {
      return state.enabled ? [{ type: 'CustomDomainDeactivated', data: { clientId, at } }] : [];
    }
    const { valid, records } = command.result;
    const checked: SendingDomainEvent = { type: 'DomainVerificationChecked', data: { clientId, valid, records, at } };
    // The first successful verify switches the custom domain on (spec: set automatically).
    const firstSuccess = valid && !state.everVerified;
    return firstSuccess ? [checked, { type: 'CustomDomainActivated', data: { clientId, automatic: true, at } }] : [checked];
  },
};
