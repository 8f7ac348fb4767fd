import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec read line by line as an integrator reads it, third pass: the places where
 * the service still differed from the spec and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

describe('Resources and their fields: the OpenAPI document types as int32 what the spec types integer (int32)', () => {
  it('Guest plusOnes and admittedPlusOnes (the Guest request, which GuestCreate extends, and the answer), and the team member event statistics counts', async () => {
    const schemas = (await request(service.url, 'GET', '/openapi.json')).body.components.schemas;
    const fields: Array<[string, Record<string, { format?: string }>]> = [
      ['Guest.plusOnes', schemas.Guest.properties],
      ['Guest.admittedPlusOnes', schemas.Guest.properties],
      ['GuestResponse.plusOnes', schemas.GuestResponse.properties],
      ['GuestResponse.admittedPlusOnes', schemas.GuestResponse.properties],
      ['TeamMemberEventStats.checkedIn', schemas.TeamMemberEventStats.items.properties],
      ['TeamMemberEventStats.checkedOut', schemas.TeamMemberEventStats.items.properties],
      ['TeamMemberEventStats.checkedInActivity.admittedCount', schemas.TeamMemberEventStats.items.properties.checkedInActivity.items.properties],
    ];
    for (const [name, properties] of fields) {
      const field = name.split('.').at(-1)!;
      expect(properties[field]?.format, name).toBe('int32');
    }
  });
});
