import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests node's parser refuses before express sees them (request line and headers over
 * `maxHeaderSize`, malformed HTTP) are answered in the API's error shape instead of node's
 * bare status line.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, code, message] = answerFor(error.code, maxHeaderSize);
    const body = JSON.stringify({ code, message });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

function answerFor(code: string | undefined, limit: number): [number, string, string] {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return [431, 'request_header_fields_too_large', `the request line and headers exceed ${limit} bytes; shorten the URL or the headers`];
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_REQUEST_TIMEOUT') {
    return [408, 'request_timeout', 'the request was not received in time; send it again'];
  }
  return [400, 'bad_request', 'the request is not valid HTTP/1.1'];
}
