import { z } from 'zod';
import { registry } from '../openapi.js';
import { Guid } from './common.js';

const name = z.string().trim().max(200);
const email = z.string().trim().email().max(320);

export const UserResponse = registry.register(
  'User',
  z.object({
    id: z.string(),
    firstName: z.string().optional(),
    lastName: z.string().optional(),
    userName: z.string(),
    email: z.string(),
    timeZoneId: z.string().optional(),
    companyName: z.string().optional(),
    customData: z.string().optional(),
  }),
);

export const UserEmailQuery = z.object({ email: z.string().trim().min(1).max(320) });

export const UserUpdateBody = registry.register(
  'UserUpdate',
  z.object({
    id: Guid,
    firstName: name.optional(),
    lastName: name.optional(),
    userName: z.string().trim().min(1).max(200).optional(),
    email: email.optional(),
    timeZoneId: z.string().max(100).optional(),
    companyName: name.optional(),
    customData: z.string().max(100_000).optional(),
    password: z
      .string()
      .optional()
      .openapi({ description: 'Ignored: change a password with PUT /users/v1/api/user/changepassword' }),
  }),
);

export const PasswordChangeBody = registry.register(
  'PasswordChangeRequest',
  z.object({
    id: Guid,
    oldPassword: z.string().min(1).max(1000),
    newPassword: z.string().min(1).max(1000),
    signOutAllSessions: z.boolean().optional(),
  }),
);

export const TeamMemberBody = registry.register(
  'TeamMember',
  z.object({
    userName: z.string().trim().min(1).max(200),
    password: z.string().min(1).max(1000),
    email,
    id: Guid.optional(),
    firstName: name.optional(),
    lastName: name.optional(),
    canForce: z
      .boolean()
      .optional()
      .openapi({ description: 'May this team member force a scan past a block or validity window (default false)' }),
  }),
);

export const TeamMemberResponse = registry.register(
  'TeamMemberResponse',
  z.object({
    id: z.string(),
    userName: z.string(),
    email: z.string(),
    firstName: z.string().optional(),
    lastName: z.string().optional(),
    canForce: z.boolean(),
  }),
);

export const UsernameParams = z.object({ username: z.string().min(1).max(320) });

export const AccountCreateBody = registry.register(
  'AdminAccountCreate',
  z.object({
    email,
    password: z.string().min(1).max(1000),
    userName: z.string().trim().min(1).max(200).optional(),
    firstName: name.optional(),
    lastName: name.optional(),
    companyName: name.optional(),
    timeZoneId: z.string().max(100).optional(),
    commsApiEnabled: z.boolean().optional(),
    senderTrusted: z.boolean().optional(),
  }),
);

export const AccountAccessBody = registry.register(
  'AdminAccountAccess',
  z.object({ commsApiEnabled: z.boolean().optional(), senderTrusted: z.boolean().optional() }),
);

export const AccountResponse = registry.register(
  'AdminAccount',
  UserResponse.extend({ commsApiEnabled: z.boolean(), senderTrusted: z.boolean() }),
);

export const AccountCreatedResponse = registry.register(
  'AdminAccountCreated',
  AccountResponse.extend({
    clientSecret: z.string().openapi({ description: 'Shown once' }),
    subscriptionKey: z.string().openapi({ description: 'Shown once' }),
    subscriptionKeyId: z.string(),
  }),
);

export const AccountIdParams = z.object({ id: Guid });
export const KeyParams = z.object({ id: Guid, keyId: Guid });
