/**
 * The ids and times the document's examples share, so that one example's answer is the next
 * one's input (event → guest → scan → template → send). tests/http/openapi.test.ts parses every
 * example with the schema it illustrates.
 */
export const ex = {
  clientId: '0b6f3c52-8a7e-4f21-9d3c-5e1a2b4c6d8f',
  eventId: '6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b',
  guestId: '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f',
  templateId: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
  invitationId: 'c7d8e9f0-1a2b-4c3d-8e4f-5a6b7c8d9e0f',
  scanId: 'd4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f70',
  teamMemberId: 'e2f3a4b5-c6d7-4e8f-9a0b-1c2d3e4f5a6b',
  webhookId: '7d5e1f0c-3b2a-5c4d-9e8f-0a1b2c3d4e5f',
  exportId: 'f0e1d2c3-b4a5-4968-8776-655443322110',
  subscriptionKeyId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
  created: '2026-11-21T10:00:00.000Z',
  start: '2026-12-12T18:00:00.000Z',
  end: '2026-12-12T23:30:00.000Z',
  scannedAt: '2026-12-12T18:42:10.000Z',
} as const;
