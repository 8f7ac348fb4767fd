import { DomainError } from '../domain/decider.js';
import { checkPasswordPolicy } from '../domain/password-policy.js';
import { teamMemberDecider, teamMemberStream, type TeamMemberProfile } from '../domain/team-member.js';
import { teamMemberIdOf, type AccountDoc, type TeamMemberDoc } from '../projections/accounts.js';
import { exactKey, isUuid, newId } from '../shared/ids.js';
import { hashPassword, verifyPassword } from '../shared/secrets.js';
import { caselessKey } from '../shared/text-key.js';
import { reservationDecider, usernameStream, type ReservationCommand } from '../domain/reservation.js';
import { checkUsernameFree, usernameClaim, withUsername } from './accounts.js';
import { handleCommands, lastPosition, type BatchItem, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';
import { rewriteIdempotentReplies } from './idempotent-replies.js';
import { forgetScannerName } from './removed-scanners.js';

/** A team member as responses show it: the spec's fields without the password. */
export interface TeamMemberView extends TeamMemberProfile {
  id: string;
}

export const toTeamMemberView = (doc: TeamMemberDoc): TeamMemberView => ({
  id: teamMemberIdOf(doc),
  userName: doc.userName,
  email: doc.email,
  ...(doc.firstName !== undefined ? { firstName: doc.firstName } : {}),
  ...(doc.lastName !== undefined ? { lastName: doc.lastName } : {}),
  canForce: doc.canForce ?? false,
});

/**
 * A team member of this client by id, or null (another client's is not seen: ids are scoped per
 * client, docs/identifiers.md). A document from before the scoping is keyed by the bare GUID.
 */
/**
 * The id a caller's team member id is stored under: itself (a plain id, kept and compared as
 * sent), or, for a GUID-shaped id no team member has in this exact spelling, the lowercase id of
 * a team member registered before plain ids kept their case (then a GUID-shaped id was lowercased;
 * docs/identifiers.md, Case).
 */
export async function storedTeamMemberId(services: Services, clientId: string, id: string): Promise<string> {
  const lower = id.toLowerCase();
  if (lower === id || !isUuid(id)) return id;
  const members = services.readStore.collection<TeamMemberDoc>('team_members');
  if (await members.get(exactKey(clientId, id), { readOnly: true })) return id;
  const old = (await members.get(exactKey(clientId, lower), { readOnly: true })) ?? (await members.get(lower, { readOnly: true }));
  return old && old.clientId === clientId && !old.idAsSent ? lower : id;
}

export async function findTeamMember(services: Services, clientId: string, teamMemberId: string): Promise<TeamMemberDoc | null> {
  const members = services.readStore.collection<TeamMemberDoc>('team_members');
  // Read-only: every caller only reads the member (its name, canForce, the stored view).
  const doc =
    (await members.get(exactKey(clientId, teamMemberId), { readOnly: true })) ??
    (isUuid(teamMemberId) && teamMemberId === teamMemberId.toLowerCase() ? await members.get(teamMemberId, { readOnly: true }) : null);
  return doc?.clientId === clientId ? doc : null;
}

/**
 * A create retried with an id this client already used: the same content (password included)
 * answers the stored team member, other content is 409 (docs/guests.md, "Retried creates").
 */
async function repeatedCreate(
  services: Services,
  clientId: string,
  teamMemberId: string,
  input: TeamMemberProfile & { password: string },
): Promise<TeamMemberView | undefined> {
  const doc = await findTeamMember(services, clientId, teamMemberId);
  if (!doc) return undefined;
  if (!(await sameTeamMember(doc, clientId, input))) {
    throw new DomainError('conflict', 'a team member with this id already exists, with other content', { code: 'team_member_exists' });
  }
  return toTeamMemberView(doc);
}

/** Whether a create asks for exactly this stored team member (the password checked against its hash). */
async function sameTeamMember(doc: TeamMemberDoc, clientId: string, input: TeamMemberProfile & { password: string }): Promise<boolean> {
  const stored = toTeamMemberView(doc);
  return (
    doc.clientId === clientId &&
    stored.userName === input.userName &&
    stored.email === input.email &&
    stored.firstName === input.firstName &&
    stored.lastName === input.lastName &&
    stored.canForce === (input.canForce ?? false) &&
    (await verifyPassword(input.password, doc.passwordHash))
  );
}

/**
 * A create without id retried (a timeout, a lost answer): the user name is the team member's key
 * (unique service-wide), so one of this client's team members with that name and the same content
 * is answered as it is; anything else leaves the name taken (409 username_taken).
 */
async function repeatedCreateByName(
  services: Services,
  clientId: string,
  input: TeamMemberProfile & { password: string },
): Promise<TeamMemberView | undefined> {
  const doc = await services.readStore
    .collection<TeamMemberDoc>('team_members')
    .findOne({ clientId, userNameLower: caselessKey(input.userName.trim()) });
  return doc && (await sameTeamMember(doc, clientId, input)) ? toTeamMemberView(doc) : undefined;
}

export async function registerTeamMember(
  services: Services,
  context: CommandContext,
  input: TeamMemberProfile & { id?: string; password: string },
): Promise<TeamMemberView> {
  const { id, password, ...profile } = input;
  const teamMemberId = id === undefined ? newId() : await storedTeamMemberId(services, context.tenantId, id);
  checkPasswordPolicy(password, profile);
  const repeated = id ? await repeatedCreate(services, context.tenantId, teamMemberId, input) : await repeatedCreateByName(services, context.tenantId, input);
  if (repeated) return repeated;
  const register = {
    streamName: teamMemberStream(context.tenantId, teamMemberId),
    decider: teamMemberDecider,
    command: {
      type: 'RegisterTeamMember' as const,
      teamMemberId,
      clientId: context.tenantId,
      profile,
      passwordHash: await hashPassword(password),
      registrationId: newId(),
    },
  };
  // The user name is claimed in the same batch, before the team member (src/commands/batch-intents.ts).
  // The claim's owner is the client and the id: a reservation repeats for its own owner, and
  // another client's team member (ids are scoped per client) or an account (owner: its bare id)
  // with this id must find the name taken, not take it too.
  const owner = exactKey(context.tenantId, teamMemberId);
  await checkUsernameFree(services, profile.userName, owner);
  const results = await withUsername(profile.userName, () =>
    handleCommands(services.eventStore, [usernameClaim(profile.userName, 'team_member', owner, 1), register], context),
  );
  await services.readYourWrites(lastPosition(results));
  return { id: teamMemberId, ...profile, canForce: profile.canForce ?? false };
}

/**
 * DELETE teammember/{id}: the client removes one of its door staff. The team member signs in no
 * more, its tokens issued before now are refused (src/http/auth.ts), its user name is given back
 * (the client may create it again, with a new password), and what it scanned stays counted.
 * Another client's team member, or an id never used, is not found; a repeat changes nothing.
 */
export async function removeTeamMember(services: Services, context: CommandContext, id: string): Promise<void> {
  const teamMemberId = await storedTeamMemberId(services, context.tenantId, id);
  const doc = await findTeamMember(services, context.tenantId, teamMemberId);
  const remove: BatchItem = {
    streamName: teamMemberStream(context.tenantId, teamMemberId),
    decider: teamMemberDecider,
    command: { type: 'RemoveTeamMember', clientId: context.tenantId, teamMemberId, at: context.now.toISOString() },
  };
  // The name is released after the removal, by the owner that claimed it (registerTeamMember).
  const items: BatchItem[] = doc
    ? [
        remove,
        {
          streamName: usernameStream(doc.userName),
          decider: reservationDecider,
          command: { type: 'Release', key: doc.userName, ownerId: exactKey(context.tenantId, teamMemberId) } satisfies ReservationCommand,
          stage: 'release',
          partOf: 0,
        },
      ]
    : [remove];
  const results = await handleCommands(services.eventStore, items, context);
  await services.readYourWrites(lastPosition(results));
  if (doc) await forgetTeamMember(services, context.tenantId, doc);
}

/**
 * What the removal leaves of the team member's personal data (docs/personal-data.md, "Team members
 * and account users"): the events' copy went with the registration's data key (the codec deletes
 * it as TeamMemberRemoved is stored), the `team_members` document with the projection. Here the
 * stored idempotent reply of its create (kept 24 h), whose `userName`, `email`, `firstName` and
 * `lastName` become `[erased]` (a retry then answers that, and creates nothing), its user name in
 * its scans and statistics (forgetScannerName: the ids and counts stay), and the deleted
 * document's bytes in the embedded store's free pages and WAL. Only a reply that is this team
 * member (its id and user name) is touched: searching every reply for a short name would spoil
 * other requests' replays.
 */
async function forgetTeamMember(services: Services, clientId: string, doc: TeamMemberDoc): Promise<void> {
  const id = teamMemberIdOf(doc);
  await rewriteIdempotentReplies(services, clientId, ({ answer }) => {
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return undefined;
    const view = answer as Record<string, unknown>;
    if (view.id !== id || view.userName !== doc.userName) return undefined;
    for (const field of ['userName', 'email', 'firstName', 'lastName']) if (typeof view[field] === 'string') view[field] = '[erased]';
    return { answer: view };
  });
  await forgetScannerName(services, clientId, id);
  await services.readStore.purgeDeleted?.();
}

/**
 * GET teammembers/user/{username}/events: the team members of the client whose user name
 * (or email) is `username` — which must be the caller — or, when `username` is one of the
 * caller's team members, that team member. Anything else is not found.
 *
 * A team member (`asTeamMember`: its id) may ask for itself only, by its own user name: a door
 * app learns whom it is signed in as (e.g. whether it may force). Any other name is not found
 * to it, its client's included.
 */
export async function listTeamMembers(services: Services, clientId: string, username: string, asTeamMember?: string): Promise<TeamMemberView[]> {
  const key = caselessKey(username.trim());
  const members = services.readStore.collection<TeamMemberDoc>('team_members');
  if (asTeamMember !== undefined) {
    const self = await members.findOne({ clientId, userNameLower: key });
    if (!self || teamMemberIdOf(self) !== asTeamMember) throw new DomainError('not_found', 'user not found');
    return [toTeamMemberView(self)];
  }
  const account = await services.readStore.collection<AccountDoc>('accounts').get(clientId);
  // The account's own name and email keyed here, as the read model keys them since this version (a document from before a rebuild keeps the earlier key).
  if (account && (caselessKey(account.userName) === key || caselessKey(account.email.trim()) === key)) {
    const views: TeamMemberView[] = [];
    for await (const doc of members.stream({ clientId }, { sort: { userNameLower: 1 } })) views.push(toTeamMemberView(doc));
    return views;
  }
  const member = await members.findOne({ clientId, userNameLower: key });
  if (!member) throw new DomainError('not_found', 'user not found');
  return [toTeamMemberView(member)];
}
