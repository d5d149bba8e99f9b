import type { Duplex } from 'node:stream';
import { AppError } from '../core/platform/errors';
import type { WireFormat } from './format';

/**
 * The longest request target (path and query) the API takes: longer is 414 in the error format.
 * No route needs more than a few hundred characters; Node itself refuses a request line and headers
 * over 16 KiB (maxHeaderSize), answered by `answerClientError` below.
 */
export const MAX_URL_LENGTH = 8192;

/**
 * A request Node's parser refused before the app saw it (http.Server 'clientError'). Node's own
 * answer is a bare status line (`431` for a long URL too, as the request line counts against the
 * header limit); this one is in the deployment's error format: 414 when the request line itself
 * is what overflowed, 431 for headers, 400 for anything malformed.
 */
export function answerClientError(format: WireFormat): (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    let error: AppError;
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      const raw = err.rawPacket?.toString('latin1') ?? '';
      const lineEnd = raw.indexOf('\r\n');
      const requestLineTooLong = lineEnd === -1 || lineEnd > MAX_URL_LENGTH;
      error = requestLineTooLong
        ? new AppError('URI_TOO_LONG', `The request URL is longer than ${MAX_URL_LENGTH} characters`)
        : new AppError('HEADERS_TOO_LARGE', 'The request headers are larger than this server accepts');
    } else {
      error = new AppError('VALIDATION_ERROR', 'Malformed HTTP request');
    }
    const body = JSON.stringify(format.errorBody(error));
    socket.end(
      `HTTP/1.1 ${error.status} ${error.status === 414 ? 'URI Too Long' : error.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
}
