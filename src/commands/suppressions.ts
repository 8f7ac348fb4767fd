import { suppressionAddressKey } from '../domain/invitation.js';
import { hashedSuppressionId, suppressionId, type SuppressionDoc } from '../projections/invitations.js';
import type { Services } from './services.js';

/** The address's keyed hash, the suppression list's name for it (docs/personal-data.md). */
export async function addressKey(services: Services, clientId: string, email: string): Promise<string> {
  return suppressionAddressKey(clientId, email, await services.dataKeys?.streamNameKey());
}

/**
 * The client's suppression-list entry of an address, or undefined: the entry named by its keyed
 * hash, else a legacy one named by the address (reports recorded before the hash).
 */
export async function suppressionOf(services: Services, clientId: string, email: string): Promise<SuppressionDoc | undefined> {
  const entries = services.readStore.collection<SuppressionDoc>('comms_suppressions');
  const found = (await entries.get(hashedSuppressionId(clientId, await addressKey(services, clientId, email)))) ?? (await entries.get(suppressionId(clientId, email)));
  return found && found.clientId === clientId ? found : undefined;
}

/**
 * Erasure of a guest who had these addresses: a legacy entry (which holds the address) becomes
 * one named by the address's keyed hash, without the address, so the address stays suppressed for
 * every guest of the client (another guest who has it, or one given it later) while the erased
 * guest's address is gone. Entries named by the hash hold no address and stay.
 */
export async function keepSuppressionsWithoutAddresses(services: Services, clientId: string, emails: Iterable<string>): Promise<void> {
  const entries = services.readStore.collection<SuppressionDoc>('comms_suppressions');
  for (const email of new Set(emails)) {
    const legacyId = suppressionId(clientId, email);
    const legacy = await entries.get(legacyId);
    if (!legacy) continue;
    const emailKey = await addressKey(services, clientId, email);
    const hashedId = hashedSuppressionId(clientId, emailKey);
    if (!(await entries.get(hashedId))) {
      const { _id: _i, email: _e, ...entry } = legacy;
      await entries.replaceOne(hashedId, { ...entry, emailKey });
    }
    await entries.deleteOne(legacyId);
  }
}
