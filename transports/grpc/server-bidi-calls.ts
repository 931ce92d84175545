// The server half's call bookkeeping that open-call-carrier.ts (PeerStreams: HeartbeatStream, ReportStream)
// and store-rpc/request-stream.ts (ReadIndexStream, ProposeStream) share: the set of open bidi calls, which a
// stopping node ends rather than wait out its grace for (they never end by themselves), each call's end in
// whichever way it comes, and the refusal of a request over a call's bound on unanswered ones.
import * as grpc from '@grpc/grpc-js';

export type ServerBidiCall = grpc.ServerDuplexStream<Buffer, Buffer>;

/** TrackedCall: one call's end, as its serve function reads it (no answer is written on an ended call). */
export interface TrackedCall {
  readonly ended: boolean;
  /** refuse ends the call now with INVALID_ARGUMENT (a message that does not decode: its request id is unknown). */
  refuse(details: string): void;
}

/** ServerBidiCalls holds one method's open server calls. */
export class ServerBidiCalls {
  private readonly calls = new Set<ServerBidiCall>();

  get size(): number {
    return this.calls.size;
  }

  /**
   * track holds `call` until it ends: the client's half-close (answered with ours), an error, a close or a
   * cancel; `onEnded` runs once then.
   */
  track(call: ServerBidiCall, onEnded: () => void = () => undefined): TrackedCall {
    this.calls.add(call);
    let ended = false;
    const finish = (): void => {
      if (ended) return;
      ended = true;
      this.calls.delete(call);
      onEnded();
    };
    call.on('end', () => {
      if (ended) return;
      finish();
      call.end();
    });
    call.on('error', finish);
    call.on('close', finish);
    call.on('cancelled', finish);
    return {
      get ended() {
        return ended;
      },
      refuse: (details) => {
        finish();
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details });
      },
    };
  }

  /** endAll ends every open call with UNAVAILABLE (their callers reopen, or go another way). */
  endAll(details: string): void {
    for (const call of [...this.calls]) {
      this.calls.delete(call);
      call.emit('error', { code: grpc.status.UNAVAILABLE, details });
    }
  }
}

/** overOpenRequestLimit: the details of a request refused RESOURCE_EXHAUSTED for its call's bound. */
export function overOpenRequestLimit(open: number, max: number, rpcName: string): string {
  return `${open} requests open on this ${rpcName} call, at its limit of ${max}`;
}
