// The contract between the gRPC server and whoever decides the answers (the
// node's driver, feeding the engine). The server decides nothing: it decodes a
// call, hands it over with a CallSink, and carries out what the sink is told.
import type {
  RpcMethod,
  RpcRequest,
  RpcResponse,
  RpcStatus,
  ShipSegmentRequest,
  SnapshotHeader,
} from '../../engine/rpc.js';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';

/** CallEnd is how a served call finished: code 0 is OK. */
export interface CallEnd {
  code: number;
  details: string;
}

/**
 * PeerHandler receives every decoded, limit-checked call. `callId` is unique per server and matches
 * the engine's `request` input and its reply/replyError/streamChunk/streamEnd/serveSnapshot effects.
 */
export interface PeerHandler {
  onRequest(callId: number, request: RpcRequest, call: CallSink): void;
  /**
   * onCallClosed is told once per call when it is over for any reason: answered, cancelled by the
   * peer, past its deadline, or ended by the server (slow reader, handler idle). Effects for the call
   * after this are dropped quietly, since they are an ordinary race, not an error.
   */
  onCallClosed?(callId: number, end: CallEnd): void;
}

/**
 * CallSink answers one call. Unary methods take exactly one reply or replyError. StreamSegments
 * takes streamChunk* then streamEnd or replyError. FetchSnapshot takes one serveSnapshot (or a
 * replyError). Using the wrong verb ends the call with INTERNAL and a warning; it never throws.
 */
export interface CallSink {
  readonly callId: number;
  readonly method: RpcMethod;
  /** peer is the caller's address as grpc-js reports it. */
  readonly peer: string;
  /**
   * callerName is the name in the caller's verified peer certificate, which the gate checked against the
   * roster before the handler saw the call; '' when there is none (a plaintext server).
   */
  readonly callerName: string;
  /**
   * readsSnapshotLayers: a FetchSnapshot caller said it reads a layered snapshot (SNAPSHOT_LAYERS_METADATA);
   * false (a binary from before layers, or any other call) is served one whole state file.
   */
  readonly readsSnapshotLayers: boolean;
  /** closed is true once nothing more can be sent on this call. */
  readonly closed: boolean;
  reply(response: RpcResponse): void;
  /** replyError ends the call with a non-OK status; its trailers go out as trailing metadata. */
  replyError(status: RpcStatus): void;
  streamChunk(chunk: ShipSegmentRequest): void;
  streamEnd(): void;
  /**
   * serveSnapshot sends the header, then (header.needed) pulls `files` only as fast as the reader
   * takes them and ends the call OK when they run out. The iterator is closed (`return()`) if the
   * call ends early, so file handles are released.
   */
  serveSnapshot(header: SnapshotHeader, files: AsyncIterable<SnapshotFileChunk>): void;
  /** bufferedBytes is what this call holds in memory, queued or handed to HTTP/2 and not yet sent. */
  bufferedBytes(): number;
}
