// Requests Node's HTTP parser refuses never reach Express: by default Node answers them with a
// bare status line and no body (a URL over 16 KB is a 431 with nothing in it). This answers
// them in the error envelope like every other error (every answer is ours).
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorEnvelope } from '@ap/contract';

function answerOf(code: string | undefined): { status: number; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, message: 'request line and headers are larger than 16 KB' };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'request headers took too long to arrive' };
  if (code === 'HPE_INVALID_METHOD') return { status: 400, message: 'unknown HTTP method' };
  return { status: 400, message: 'malformed HTTP request' };
}

export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // Nothing to answer on a socket that is gone or already answering.
    if (err.code === 'ECONNRESET' || !socket.writable || (socket as Duplex & { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const { status, message } = answerOf(err.code);
    const body = JSON.stringify(errorEnvelope('INVALID_REQUEST', message));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
