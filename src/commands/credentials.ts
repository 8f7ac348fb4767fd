import type { CredentialVerifier, TokenSubject } from '../identity/credentials.js';
import { teamMemberIdOf, type AccountDoc, type TeamMemberDoc } from '../projections/accounts.js';
import { dummyPasswordHash, sameSecret, verifyPassword } from '../shared/secrets.js';
import type { Services } from './services.js';

/** Checks the dev identity provider's grants against the accounts and team_members read models. */
export function accountCredentials(services: Services): CredentialVerifier {
  const accounts = services.readStore.collection<AccountDoc>('accounts');
  const members = services.readStore.collection<TeamMemberDoc>('team_members');
  return {
    async verifyClient(clientId, clientSecret) {
      const account = await accounts.get(clientId.toLowerCase());
      if (!account || !sameSecret(clientSecret, account.clientSecretHash)) return null;
      return { sub: account._id, tenant: account._id, role: 'client' };
    },
    async verifyPassword(username, password) {
      const key = username.trim().toLowerCase();
      const account = await accounts.findOne({ $or: [{ userNameLower: key }, { emailLower: key }] });
      const member = account ? null : await members.findOne({ userNameLower: key });
      const hash = account?.passwordHash ?? member?.passwordHash ?? dummyPasswordHash;
      // Hash even when nobody has this name, so the answer takes as long either way.
      const matches = await verifyPassword(password, hash);
      if (!matches) return null;
      if (account) return { sub: account._id, tenant: account._id, role: 'client' } satisfies TokenSubject;
      if (member) return { sub: teamMemberIdOf(member), tenant: member.clientId, role: 'team_member' } satisfies TokenSubject;
      return null;
    },
  };
}
