// A STAND-IN for gitea's git endpoint (not gitea): a bare repository served over smart HTTP by `git
// http-backend` on 127.0.0.1, behind HTTP basic authentication whose password must be the token it was given
// (gitea accepts a token as the basic-auth password the same way). A request without it gets 401.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInGitServer {
  port: number;
  /** authorized counts the requests that carried the token. */
  authorized: number;
  refused: number;
  close(): Promise<void>;
}

/** startStandInGitServer serves every bare repository under projectRoot at /<name>.git. */
export async function startStandInGitServer(projectRoot: string, token: string): Promise<StandInGitServer> {
  const state = { authorized: 0, refused: 0 };
  const server = http.createServer((req, res) => {
    const header = req.headers.authorization ?? '';
    const password = header.startsWith('Basic ')
      ? Buffer.from(header.slice(6), 'base64').toString('utf8').split(':').slice(1).join(':')
      : '';
    if (password !== token) {
      state.refused++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="stand-in gitea"' });
      res.end('authentication required\n');
      return;
    }
    state.authorized++;
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const backend = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: 'svc-agent',
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(backend.stdin);
    // CGI: headers, a blank line, then the body.
    let head = Buffer.alloc(0);
    let headersSent = false;
    backend.stdout.on('data', (chunk: Buffer) => {
      if (headersSent) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      headersSent = true;
      res.write(head.subarray(end + 4));
    });
    backend.on('close', () => {
      if (!headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get authorized() {
      return state.authorized;
    },
    get refused() {
      return state.refused;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
