import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * `Expect: 100-continue` (RFC 9110 section 10.1.1): a client (curl for every upload over 1 MiB)
 * sends the headers and waits for `100 Continue` before the body, so that a request refused on
 * its headers is not uploaded. Node answers `100 Continue` at once, before the app has seen the
 * request, so a stranger's 401, a 413 on the declared length or a 415 came only after the client
 * had started sending the whole body. Here the request goes to the app as any other (every
 * `request` listener, graceful shutdown's included), and `100 Continue` is written only when the
 * app starts reading the body; a request answered without reading it gets its final answer
 * instead, and node closes the connection (the body was never sent).
 *
 * Any other expectation is 417 in the API's error shape, as RFC 9110 allows, instead of node's
 * bare status line.
 */
export function continueOnRead(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const onListener = (event: string | symbol) => {
      if (event !== 'data' && event !== 'readable') return;
      req.off('newListener', onListener);
      if (!res.headersSent && !res.writableEnded) res.writeContinue();
    };
    req.on('newListener', onListener);
    server.emit('request', req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify({ code: 'expectation_failed', message: `the expectation ${req.headers.expect ?? ''} is not supported; only 100-continue is` });
    res.writeHead(417, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    res.end(body);
  });
}
