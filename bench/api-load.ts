// A closed-loop HTTP/1.1 load generator for bench/api-cluster.ts: a fixed set of keep-alive connections per
// target, each sending one GET as soon as its previous answer is in, switched on and off in short slices so that
// two targets (a bare handler and the API, same process) are measured alternately with the same generator and the
// same connections. Written here rather than autocannon because autocannon runs for a duration or an amount and
// opens new connections each run: a 300 ms slice would be mostly its start and stop. It parses only what it needs
// (status line, Content-Length or chunked, never a body), so its own CPU per request stays small and equal for both
// targets. It must run in a process other than the servers it loads (bench/api-cluster.ts: the nodes are child
// processes); in the servers' own event loop it would take turns with them and measure its own scheduling
// (bench/api.ts, whose servers live in the bench process, keeps autocannon in a process of its own).
import net from 'node:net';

/** SliceResult is one slice's figures for one target. */
export interface SliceResult {
  /** rps: answers completed inside the slice's steady window, per second of that window. */
  rps: number;
  /** answered counts every answer of the slice, the drained ones included (what the server's CPU paid for). */
  answered: number;
  /** non2xx counts answers whose status was not 2xx. */
  non2xx: number;
  /** latenciesMs: send → last byte of each answer completed inside the steady window. */
  latenciesMs: number[];
}

/** HttpLoadTarget holds `connections` keep-alive sockets to one URL; they stay open across slices. */
export class HttpLoadTarget {
  private readonly sockets: LoadConnection[] = [];

  private constructor(
    readonly url: URL,
    private readonly request: Buffer,
  ) {}

  static async open(url: string, headers: Record<string, string>, connections: number): Promise<HttpLoadTarget> {
    const parsed = new URL(url);
    const lines = [
      `GET ${parsed.pathname}${parsed.search} HTTP/1.1`,
      `Host: ${parsed.host}`,
      'Connection: keep-alive',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    const target = new HttpLoadTarget(parsed, Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'));
    for (let index = 0; index < connections; index++) {
      target.sockets.push(await LoadConnection.connect(parsed.hostname, Number(parsed.port), target.request));
    }
    return target;
  }

  /**
   * slice drives every connection for sliceMs, then stops sending and waits for the answers in flight (so that the
   * next slice, on any target, starts on an idle server). The rate counts answers completed after warmMs, so that
   * the ramp (the first answers of each connection) and the drain are outside it for both targets alike.
   */
  async slice(sliceMs: number, warmMs: number, drainMsMax: number): Promise<SliceResult> {
    const startedMs = performance.now();
    const window = { fromMs: startedMs + warmMs, toMs: startedMs + sliceMs };
    const tally: Tally = { inWindow: 0, answered: 0, non2xx: 0, latenciesMs: [] };
    await Promise.all(this.sockets.map((socket) => socket.run(window, tally, drainMsMax)));
    return {
      rps: (tally.inWindow / (sliceMs - warmMs)) * 1000,
      answered: tally.answered,
      non2xx: tally.non2xx,
      latenciesMs: tally.latenciesMs,
    };
  }

  close(): void {
    for (const socket of this.sockets) socket.close();
  }
}

interface Tally {
  inWindow: number;
  answered: number;
  non2xx: number;
  latenciesMs: number[];
}

/** headerBytesMax bounds an answer's head; a longer one is a broken target. */
const headerBytesMax = 64 * 1024;

/** LoadConnection is one socket: one request in flight at a time, answers framed by Content-Length or chunks. */
class LoadConnection {
  private buffered: Buffer = Buffer.alloc(0);
  private sentMs = 0;
  private window = { fromMs: 0, toMs: 0 };
  private tally: Tally | null = null;
  private finished: (() => void) | null = null;
  private failed: ((error: Error) => void) | null = null;
  private chunked = false;
  private bodyLeft = -1;
  private status = 0;

  private constructor(
    private readonly socket: net.Socket,
    private readonly request: Buffer,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.failed?.(error));
    socket.on('close', () => this.failed?.(new Error('the target closed a load connection')));
  }

  static connect(host: string, port: number, request: Buffer): Promise<LoadConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new LoadConnection(socket, request));
      });
    });
  }

  run(window: { fromMs: number; toMs: number }, tally: Tally, drainMsMax: number): Promise<void> {
    this.window = window;
    this.tally = tally;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`an answer took longer than ${drainMsMax} ms past its slice`)),
        window.toMs - performance.now() + drainMsMax,
      );
      this.finished = () => {
        clearTimeout(timer);
        resolve();
      };
      this.failed = (error) => {
        clearTimeout(timer);
        reject(error);
      };
      this.send();
    });
  }

  close(): void {
    this.failed = null;
    this.socket.destroy();
  }

  private send(): void {
    this.sentMs = performance.now();
    this.socket.write(this.request);
  }

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (this.parse()) {
      // one answer complete
      const nowMs = performance.now();
      const tally = this.tally!;
      tally.answered++;
      if (this.status < 200 || this.status > 299) tally.non2xx++;
      if (nowMs >= this.window.fromMs && nowMs < this.window.toMs) {
        tally.inWindow++;
        tally.latenciesMs.push(nowMs - this.sentMs);
      }
      if (nowMs < this.window.toMs) this.send();
      else {
        const finished = this.finished;
        this.finished = null;
        this.failed = null;
        finished?.();
      }
    }
  }

  /** parse consumes one complete answer from the buffer, if it holds one. */
  private parse(): boolean {
    if (this.bodyLeft < 0) {
      const headEnd = this.buffered.indexOf('\r\n\r\n');
      if (headEnd < 0) {
        if (this.buffered.length > headerBytesMax) this.failed?.(new Error('an answer head over 64 KiB'));
        return false;
      }
      const head = this.buffered.toString('latin1', 0, headEnd);
      this.status = Number(head.slice(9, 12));
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      this.chunked = length === null && /\r\ntransfer-encoding:\s*chunked/i.test(head);
      if (length === null && !this.chunked) {
        this.failed?.(new Error('an answer with neither Content-Length nor chunked encoding'));
        return false;
      }
      this.bodyLeft = this.chunked ? 0 : Number(length![1]);
      this.buffered = this.buffered.subarray(headEnd + 4);
    }
    if (this.chunked) {
      // Chunked: the answer ends at the zero-length chunk (no trailers from these targets).
      const end = this.buffered.indexOf('\r\n0\r\n\r\n');
      const atStart = this.buffered.subarray(0, 5).toString('latin1') === '0\r\n\r\n';
      if (end < 0 && !atStart) return false;
      this.buffered = this.buffered.subarray(atStart ? 5 : end + 7);
    } else {
      if (this.buffered.length < this.bodyLeft) return false;
      this.buffered = this.buffered.subarray(this.bodyLeft);
    }
    this.bodyLeft = -1;
    return true;
  }
}
