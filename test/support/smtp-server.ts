/**
 * A real SMTP server for the SMTP mailer's tests: `smtp-server` (by the nodemailer author) on
 * 127.0.0.1 with an ephemeral port. Plain text, no STARTTLS, and AUTH required and allowed
 * without TLS, so `smtp://user:pass@127.0.0.1:<port>` logs in with AUTH LOGIN or PLAIN; a
 * wrong user or password is answered `535`. It keeps each accepted message's raw RFC 822 data
 * (after dot-unstuffing, as any server stores it) and its envelope.
 *
 * `failNext` scripts one SMTP reply for the next MAIL FROM, RCPT TO or end of DATA. Replies
 * are given in SMTP terms (451 try later, 550 mailbox unavailable, ...), not as HTTP statuses:
 * the reply code is what the client sees and what the mailer reports. Or, instead of a reply,
 * the connection is dropped there (`drop`). A drop at DATA comes once the server has the whole
 * message (after the end of data): the message counts as received, as a real server that lost
 * only its 250 would deliver it.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

export type AuthMethod = 'PLAIN' | 'LOGIN';

/**
 * The SMTP stages a scripted reply can answer: MAIL FROM, RCPT TO, the end of data. `BODY` (the
 * first chunk of the message data, before its end) takes a drop only: nothing is answered there.
 */
export type SmtpStage = 'MAIL' | 'RCPT' | 'BODY' | 'DATA';

/**
 * How the server drops a connection instead of replying: `close` ends it (FIN), `reset` resets it
 * (RST), `hang` keeps it open and never replies (the client's socket timeout ends it).
 */
export type SmtpDrop = 'close' | 'reset' | 'hang';

export type ScriptedReply = {
  /** Which command gets the reply; default `DATA` (the end of the message data). */
  at?: SmtpStage;
} & (
  | {
      /** SMTP reply code, e.g. 451 (transient) or 550 (permanent). */
      code: number;
      message?: string;
    }
  | { drop: SmtpDrop }
);

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

  /**
   * Answers this stage as scripted, if the next scripted reply is for it: a reply code becomes the
   * callback's SMTP error, a drop is done on the session's connection (the callback is never called).
   * False when nothing is scripted here.
   */
  const scriptedAnswer = (stage: SmtpStage, session: SMTPServerSession, callback: (error?: Error) => void): boolean => {
    const next = scripted[0];
    if (!next || (next.at ?? 'DATA') !== stage) return false;
    scripted.shift();
    if ('drop' in next) {
      const socket = [...server.connections].find((connection) => connection.session === session)?._socket;
      if (!socket) throw new Error(`test SMTP server: no connection for session ${session.id}`);
      if (next.drop === 'close') socket.destroy();
      if (next.drop === 'reset') (socket as Socket).resetAndDestroy();
      return true;
    }
    callback(Object.assign(new Error(next.message ?? `Scripted failure at ${stage}`), { responseCode: next.code }));
    return true;
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
    onMailFrom(_address, session, callback) {
      if (!scriptedAnswer('MAIL', session, callback)) callback();
    },
    onRcptTo(_address, session, callback) {
      if (!scriptedAnswer('RCPT', session, callback)) callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.once('data', () => scriptedAnswer('BODY', session, () => {
        throw new Error('test SMTP server: nothing can be answered in the middle of the message data; script a drop at BODY');
      }));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const mail = () => {
          const { mailFrom, rcptTo } = session.envelope;
          return {
            raw: Buffer.concat(chunks),
            envelope: { from: mailFrom ? mailFrom.address : '', to: rcptTo.map((rcpt) => rcpt.address) },
            auth: sessions.get(session)!.auth,
          };
        };
        const next = scripted[0];
        // Dropped after the end of data: the server has the message, only its reply is lost.
        if (next && (next.at ?? 'DATA') === 'DATA' && 'drop' in next) received.push(mail());
        if (scriptedAnswer('DATA', session, callback)) return;
        received.push(mail());
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
