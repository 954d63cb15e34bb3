import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * What the HTTP server answers to a request it cannot parse, in the contract's envelope instead
 * of Node's bare status line: 431 for a request line and headers over Node's 16 KB limit (a long
 * query string), 408 for one that did not arrive in time, 400 for anything else malformed. The
 * connection is closed after the answer.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, error] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request line and headers are larger than 16 KB: shorten the query string']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'The request did not arrive in time']
          : [400, 'Malformed HTTP request'];
    const body = JSON.stringify({ ok: false, error });
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
}
