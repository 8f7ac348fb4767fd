import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { DomainSetup, SendingDomainEvent } from '../domain/sending-domain.js';
import type { Projection } from './projection.js';

/** `sending_domains`: one document per client with a custom sending domain. */
export interface SendingDomainDoc extends DomainSetup {
  _id: string;
  /** All records valid at the last verify. */
  valid: boolean;
  /** A verify has succeeded at least once (activate needs it). */
  everVerified: boolean;
  /** EnableCustomDomain: sends use the custom domain. */
  enabled: boolean;
  createdAt: string;
  lastVerifiedAt?: string;
  updatedAt: string;
}

export const sendingDomainsProjection: Projection = {
  name: 'sending_domains',
  filter: { streamPrefixes: ['domain-'] },
  collections: [{ name: 'sending_domains', indexes: [{ name: 'domain', keys: { domain: 1 } }] }],
  apply(stored: StoredEvent) {
    const event = stored as unknown as StoredEvent & SendingDomainEvent;
    const { clientId, at } = event.data;
    const set = (fields: Partial<SendingDomainDoc>) => [
      { kind: 'update' as const, collection: 'sending_domains', id: clientId, update: { $set: { ...fields, updatedAt: at } } },
    ];
    switch (event.type) {
      case 'DomainConfigured': {
        const { clientId: _c, at: _a, ...setup } = event.data;
        const doc: Omit<SendingDomainDoc, '_id'> = { ...setup, valid: false, everVerified: false, enabled: false, createdAt: at, updatedAt: at };
        return [{ kind: 'replace', collection: 'sending_domains', id: clientId, doc }];
      }
      case 'DomainVerificationChecked':
        return [
          {
            kind: 'update',
            collection: 'sending_domains',
            id: clientId,
            update: {
              $set: { valid: event.data.valid, records: event.data.records, lastVerifiedAt: at, updatedAt: at, ...(event.data.valid ? { everVerified: true } : {}) },
            },
          },
        ];
      case 'CustomDomainActivated':
        return set({ enabled: true });
      case 'CustomDomainDeactivated':
        return set({ enabled: false });
      default:
        return [];
    }
  },
};
