import express, { Router } from 'express';
import { sendgridReports, sendgridSignatureVerifier, signatureHeader, timestampHeader } from '../../adapters/mailer/sendgrid-events.js';
import { recordProviderReports } from '../../commands/invitations.js';
import type { Services } from '../../commands/services.js';
import { HttpError } from '../errors.js';

export const sendgridEventsPath = '/comms/v1/api/comms/provider/sendgrid/events';

/**
 * The delivery provider's event intake (SendGrid Event Webhook): delivered, opened, bounced,
 * dropped, spam_reported and unsubscribed reports become comms webhooks. SendGrid holds no
 * token of ours: the request is authenticated by its ECDSA signature over the raw body,
 * so this router sits before the API's authentication and JSON parsing.
 */
export function providerEventsRouter(services: Services, publicKey: string): Router {
  const verify = sendgridSignatureVerifier(publicKey);
  const router = Router();
  router.post(sendgridEventsPath, express.raw({ type: () => true, limit: '5mb' }), async (req, res) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const signature = req.get(signatureHeader);
    const timestamp = req.get(timestampHeader);
    if (!signature || !timestamp || !verify(body, signature, timestamp)) {
      throw new HttpError(401, 'unauthorized', 'the event webhook signature does not verify with the configured key');
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new HttpError(400, 'validation_error', 'the request body is not valid JSON', [{ path: '(body)', message: 'invalid JSON' }]);
    }
    const result = await recordProviderReports(services, sendgridReports(parsed));
    res.json(result);
  });
  return router;
}
