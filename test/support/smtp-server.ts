/**
 * A real SMTP server for the SMTP mailer's tests: `smtp-server` (by the nodemailer author) on
 * 127.0.0.1 with an ephemeral port. Plain text, no STARTTLS, and AUTH required and allowed
 * without TLS, so `smtp://user:pass@127.0.0.1:<port>` logs in with AUTH LOGIN or PLAIN; a
 * wrong user or password is answered `535`. It keeps each accepted message's raw RFC 822 data
 * (after dot-unstuffing, as any server stores it) and its envelope.
 *
 * `failNext` scripts one SMTP reply for the next MAIL FROM, RCPT TO or end of DATA. Replies
 * are given in SMTP terms (451 try later, 550 mailbox unavailable, ...), not as HTTP statuses:
 * the reply code is what the client sees and what the mailer reports.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

export type AuthMethod = 'PLAIN' | 'LOGIN';

/** The SMTP stages a scripted reply can answer. */
export type SmtpStage = 'MAIL' | 'RCPT' | 'DATA';

export interface ScriptedReply {
  /** SMTP reply code, e.g. 451 (transient) or 550 (permanent). */
  code: number;
  message?: string;
  /** Which command gets the reply; default `DATA` (the end of the message data). */
  at?: SmtpStage;
}

export interface ReceivedMail {
  /** The message exactly as the server received it (RFC 822, CRLF line ends). */
  raw: Buffer;
  envelope: { from: string; to: string[] };
  /** Who logged in for this message and with which SASL mechanism. */
  auth: { method: AuthMethod; username: string };
}

export interface SmtpTestServer {
  /** `smtp://user:pass@127.0.0.1:<port>` with the credentials the server accepts (URL-encoded). */
  url: string;
  user: string;
  password: string;
  /** The same server reached with other credentials (URL-encoded here). */
  urlWith(credentials: { user?: string; password: string }): string;
  /** Messages accepted so far, oldest first. */
  received: ReceivedMail[];
  /** Every AUTH attempt, oldest first (the password is never recorded). */
  logins: Array<{ method: string; username: string; accepted: boolean }>;
  /** The next MAIL FROM, RCPT TO or DATA (`at`, default DATA) is answered with this reply. */
  failNext(reply: ScriptedReply): void;
  close(): Promise<void>;
}

interface SessionState {
  auth: { method: AuthMethod; username: string };
}

export async function startSmtpServer(options: { authMethods?: AuthMethod[]; password?: string } = {}): Promise<SmtpTestServer> {
  const user = 'mailer-test';
  // Characters a URL has to percent-encode, so a test shows the URL's password is decoded.
  const password = options.password ?? `p@ss:w/rd%${randomBytes(6).toString('hex')}`;
  const received: ReceivedMail[] = [];
  const logins: SmtpTestServer['logins'] = [];
  const scripted: ScriptedReply[] = [];
  const sessions = new WeakMap<SMTPServerSession, SessionState>();

  /** Takes the scripted reply for this stage, if the next one is for it, as an SMTP error. */
  const scriptedError = (stage: SmtpStage): Error | undefined => {
    const next = scripted[0];
    if (!next || (next.at ?? 'DATA') !== stage) return undefined;
    scripted.shift();
    const { code, message } = next;
    return Object.assign(new Error(message ?? `Scripted failure at ${stage}`), { responseCode: code });
  };

  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: options.authMethods ?? ['PLAIN', 'LOGIN'],
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 1000,
    onAuth(auth, session, callback) {
      const accepted = (auth.method === 'PLAIN' || auth.method === 'LOGIN') && auth.username === user && auth.password === password;
      logins.push({ method: auth.method, username: auth.username ?? '', accepted });
      if (!accepted) {
        return callback(Object.assign(new Error('Authentication credentials invalid'), { responseCode: 535 }));
      }
      sessions.set(session, { auth: { method: auth.method as AuthMethod, username: user } });
      callback(null, { user });
    },
    onMailFrom(_address, _session, callback) {
      callback(scriptedError('MAIL'));
    },
    onRcptTo(_address, _session, callback) {
      callback(scriptedError('RCPT'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const error = scriptedError('DATA');
        if (error) return callback(error);
        const { mailFrom, rcptTo } = session.envelope;
        received.push({
          raw: Buffer.concat(chunks),
          envelope: { from: mailFrom ? mailFrom.address : '', to: rcptTo.map((rcpt) => rcpt.address) },
          auth: sessions.get(session)!.auth,
        });
        callback(null, 'Message accepted');
      });
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.server.address() as AddressInfo;
  const urlWith = (credentials: { user?: string; password: string }) =>
    `smtp://${encodeURIComponent(credentials.user ?? user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}`;

  return {
    url: urlWith({ password }),
    user,
    password,
    urlWith,
    received,
    logins,
    failNext: (reply) => void scripted.push(reply),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
