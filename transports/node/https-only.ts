// httpsOnly puts a plain TCP listener in front of an HTTPS server so that plain HTTP sent to the HTTPS port
// gets a clear refusal (400, HTTPS_REQUIRED, then close) instead of a TLS alert that HTTP clients report as an
// empty reply. It reads the connection's first byte: a TLS record starts with 0x16 (handshake); anything else is
// not TLS. Written here (about 40 lines) because the packages that do this (httpolyglot and its forks) serve
// HTTP and HTTPS on one port, which is what this must not do.
import { createServer, type Server, type Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';

/** TLS_HANDSHAKE_RECORD is the first byte of a TLS ClientHello (the record type "handshake"). */
const TLS_HANDSHAKE_RECORD = 0x16;

export const HTTPS_REQUIRED_BODY = JSON.stringify({
  status: 'error',
  code: 'HTTPS_REQUIRED',
  reason: 'this port serves HTTPS only: use https://',
});

/**
 * httpsOnly answers a front server; listen on it instead of `tls`. firstByteTimeoutMs bounds the wait for a
 * client's first byte (a connection that sends nothing is closed).
 */
export function httpsOnly(tls: TlsServer, firstByteTimeoutMs: number): Server {
  return createServer({ pauseOnConnect: true }, (socket: Socket) => {
    socket.setTimeout(firstByteTimeoutMs, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.setTimeout(0);
      socket.unshift(chunk);
      // The TLS socket reads what is buffered here before the rest (node's _tls_wrap initRead).
      if (chunk[0] === TLS_HANDSHAKE_RECORD) tls.emit('connection', socket);
      else refusePlaintext(socket);
    });
    socket.resume();
  });
}

function refusePlaintext(socket: Socket): void {
  // Drain what the client sends, so closing is an orderly FIN and the client reads the answer.
  socket.on('data', () => undefined);
  socket.resume();
  socket.end(
    'HTTP/1.1 400 Bad Request\r\n' +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(HTTPS_REQUIRED_BODY)}\r\n` +
      'connection: close\r\n\r\n' +
      HTTPS_REQUIRED_BODY,
  );
  socket.setTimeout(5_000, () => socket.destroy());
}
