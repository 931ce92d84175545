// SimEvent is everything that can happen in the world at a point of virtual
// time. Events for one engine incarnation carry `inc`; they are dropped when
// that incarnation is gone (crashed) and queued while the node is paused.
// `msg` is the view note id of the message an event carries (0 or undefined: none; see sim/trace.ts).
// A request or answer event is built with every field, optional ones undefined, in the order below: one hidden
// class per kind, so dispatch and the router are not deoptimised by a rarer variant (a late answer, a replay).
import type { Effect, Input } from '../engine/types.js';
import type { RpcRequest, SnapshotHeader } from '../engine/rpc.js';
import type { Artifact } from './artifacts.js';

/** ClientListener hears the answers to a script's client call (Cluster.injectClient): replies, errors, stream messages. */
export type ClientListener = (answer: Extract<Effect, { callId: number }>) => void;

export type SimEvent =
  | { k: 'tick'; node: number; inc: number }
  | { k: 'stats'; node: number; inc: number }
  /** input: hand an input to one incarnation; netFrom is the sending node, -1 for a client. */
  | { k: 'input'; node: number; inc: number; input: Input; netFrom: number }
  /**
   * request: a call arrives at a server (any incarnation of it). `cluster` is the cluster id it
   * carries on the wire; `foreign` names the forgery of forged traffic (sim/foreign.ts: no caller,
   * from = -1), '' for a member's call; afterCrashOf: a replay aimed past that incarnation's crash;
   * client: a script's client call (no caller; its answers go to the listener).
   */
  | {
      k: 'request';
      node: number;
      from: number;
      callKey: number;
      request: RpcRequest;
      copy: boolean;
      cluster: string;
      foreign: string;
      afterCrashOf: number | undefined;
      msg: number | undefined;
      client: ClientListener | undefined;
    }
  /** answer: a response, failure, chunk or end arrives at the caller. */
  /** answer: lateFromTerm is set on an answer held back 0.5-3 election timeouts: the caller's term when it called. */
  | {
      k: 'answer';
      node: number;
      inc: number;
      netFrom: number;
      callKey: number;
      input: Input;
      final: boolean;
      lateFromTerm: number | undefined;
      msg: number | undefined;
    }
  /** snapshot: a FetchSnapshot stream arrives (whole) at the puller, or fails. */
  | {
      k: 'snapshot';
      node: number;
      inc: number;
      from: number;
      callKey: number;
      header: SnapshotHeader;
      files: Map<string, Uint8Array> | null;
      failure: string;
      msg?: number;
    }
  | { k: 'deadline'; node: number; inc: number; callKey: number }
  | { k: 'sync'; node: number; inc: number }
  | { k: 'staged'; node: number; inc: number; artifact: Artifact }
  /** statusAsk: a status poll reaches the node it asks (the leader's status endpoint). */
  | { k: 'statusAsk'; node: number; from: number; fromInc: number }
  | { k: 'world'; label: string; run: () => void };
