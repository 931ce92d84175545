// H2Server: a listening socket (plaintext, or TLS offering only ALPN h2) whose every connection is an
// H2ServerConnection (connection.ts). The peer certificate is read once per connection, not per call.
import * as net from 'node:net';
import * as tls from 'node:tls';
import { H2ServerConnection, type H2Stream } from './connection.js';
import { resolveH2Limits, type H2Limits } from './limits.js';

export interface H2ServerOptions {
  /** TLS options (key, cert, ca, requestCert, rejectUnauthorized …); absent: plaintext (h2c with prior knowledge). */
  tls?: tls.TlsOptions;
  limits?: Partial<H2Limits>;
  onStream(stream: H2Stream): void;
}

export class H2Server {
  readonly connections = new Set<H2ServerConnection>();
  readonly limits: H2Limits;
  private readonly server: net.Server;

  private constructor(private readonly options: H2ServerOptions) {
    this.limits = resolveH2Limits(options.limits);
    if (options.tls) {
      const server = tls.createServer({ ...options.tls, ALPNProtocols: ['h2'] });
      server.on('secureConnection', (socket: tls.TLSSocket) => {
        // A client that did not negotiate h2 would read our frames as garbage: refuse it.
        if (socket.alpnProtocol !== 'h2') return void socket.destroy();
        this.adopt(socket);
      });
      // A failed handshake is the client's problem; it must not reach 'error'.
      server.on('tlsClientError', () => undefined);
      this.server = server;
    } else this.server = net.createServer((socket) => this.adopt(socket));
  }

  static async listen(host: string, port: number, options: H2ServerOptions): Promise<H2Server> {
    const server = new H2Server(options);
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.server.listen(port, host, () => {
        server.server.off('error', reject);
        resolve();
      });
    });
    return server;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  private adopt(socket: net.Socket): void {
    const connection = new H2ServerConnection(socket, this.limits, {
      onStream: (stream) => this.options.onStream(stream),
      onClose: () => this.connections.delete(connection),
    });
    this.connections.add(connection);
  }

  /**
   * close stops accepting, sends GOAWAY on every connection and waits for their calls to end, at most `graceMs`:
   * then the connections left are dropped (their handlers told), so a handler that never answers cannot hold it.
   */
  async close(graceMs = 5_000): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const connection of this.connections) connection.close();
    const grace = setTimeout(() => {
      for (const connection of this.connections) connection.destroy();
    }, graceMs);
    await closed;
    clearTimeout(grace);
  }
}
