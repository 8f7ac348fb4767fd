/**
 * The SendGrid test double and a webhook receiver in a process of their own, as SendGrid and an
 * integrator's receiver are remote in production (in the service's process their CPU would be
 * counted as the door's). Prints one line of JSON: {sendgridUrl, apiKey, hookUrl}; runs until killed or its stdin closes.
 * Started by door-during-sends.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSendGridDouble } from '../../test/support/sendgrid-double.js';

const sendgrid = await startSendGridDouble();
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200).end());
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
process.stdout.write(`${JSON.stringify({ sendgridUrl: sendgrid.url, apiKey: sendgrid.apiKey, hookUrl })}\n`);
// Runs until its parent closes our stdin: killed, or ended without killing us.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
