// ServedCalls is the node's side of the peer server: each decoded call becomes the engine's
// `request` input, its sink is kept by call id, and the engine's answers (reply, replyError,
// streamChunk, streamEnd, serveSnapshot) are carried to that sink. Answers for a call that is
// already over (the peer left, a deadline passed) are dropped quietly: that race is ordinary.
import { StatusCode, type RpcRequest, type SnapshotHeader } from '../../engine/rpc.js';
import type { SnapshotFilter } from '../../engine/types.js';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import type { CallSink, PeerHandler } from '../grpc/call-sink.js';
import type { AnswerEffect } from './driver.js';
import type { CutSnapshot } from './snapshot-transfer.js';
import { stamp } from './write-trace.js';

export interface ServedCallsOptions {
  /**
   * deliver queues the request for the engine, or returns why the node cannot take it now (starting, overloaded,
   * stopped). callerName is the caller's verified certificate name, '' when there is none.
   */
  deliver: (callId: number, request: RpcRequest, callerName: string) => string | null;
  /** snapshotFiles opens the staged artifact a header names, or says why it cannot. */
  snapshotFiles: (snapshotSeq: number) => AsyncIterable<SnapshotFileChunk> | string;
  /**
   * cutSnapshot: the staged artifact a header names cut to a filtered member's communities, or (cut null) its
   * state as one whole file for a caller that does not read layers; or why it cannot be.
   */
  cutSnapshot: (header: SnapshotHeader, cut: SnapshotFilter | null) => Promise<CutSnapshot | string>;
}

export class ServedCalls implements PeerHandler {
  private readonly sinks = new Map<number, CallSink>();

  constructor(private readonly options: ServedCallsOptions) {}

  get openCount(): number {
    return this.sinks.size;
  }

  onRequest(callId: number, request: RpcRequest, call: CallSink): void {
    // The sink is known before the request is delivered: the engine may answer within deliver.
    this.sinks.set(callId, call);
    const refusal = this.options.deliver(callId, request, call.callerName);
    if (refusal === null) return;
    this.sinks.delete(callId);
    call.replyError({ code: StatusCode.UNAVAILABLE, details: refusal, trailers: {} });
  }

  onCallClosed(callId: number): void {
    this.sinks.delete(callId);
  }

  answer(effect: AnswerEffect): void {
    const sink = this.sinks.get(effect.callId);
    if (!sink || sink.closed) return;
    switch (effect.type) {
      case 'reply':
        sink.reply(effect.response);
        return;
      case 'replyError':
        sink.replyError(effect.status);
        return;
      case 'streamChunk':
        if (effect.chunk.eventCount > 0) stamp('ship.sent', effect.chunk.leaderLastSeq, sink.callerName);
        sink.streamChunk(effect.chunk);
        return;
      case 'streamEnd':
        sink.streamEnd();
        return;
      case 'serveSnapshot': {
        if (!effect.header.needed) {
          sink.serveSnapshot(effect.header, emptyFiles());
          return;
        }
        if (effect.filter || !sink.readsSnapshotLayers) {
          // A filtered member is served only a snapshot cut to its communities (its own header and manifest),
          // never the full artifact (docs/protocol.md, "Filtered snapshots"); a caller from before layered
          // snapshots, the artifact's state as one whole store.json (the artifact itself when it is one already).
          void this.options.cutSnapshot(effect.header, effect.filter ?? null).then(
            (cut) => {
              if (sink.closed) return;
              if (typeof cut === 'string')
                sink.replyError({ code: StatusCode.UNAVAILABLE, details: cut, trailers: {} });
              else sink.serveSnapshot(cut.header, cut.files);
            },
            (err: unknown) => {
              if (!sink.closed)
                sink.replyError({
                  code: StatusCode.UNAVAILABLE,
                  details: `cannot cut the snapshot: ${String(err)}`,
                  trailers: {},
                });
            },
          );
          return;
        }
        const files = this.options.snapshotFiles(effect.header.snapshotSeq);
        if (typeof files === 'string') sink.replyError({ code: StatusCode.UNAVAILABLE, details: files, trailers: {} });
        else sink.serveSnapshot(effect.header, files);
        return;
      }
      default:
        assertNever(effect);
    }
  }
}

async function* emptyFiles(): AsyncGenerator<SnapshotFileChunk> {
  // needed=false: the header is the whole answer
}

function assertNever(value: never): never {
  throw new Error(`unhandled answer ${JSON.stringify(value)}`);
}
