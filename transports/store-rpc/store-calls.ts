// What both halves of svc.store.v1.Store (proto/svc/store/v1/store.proto) share: the method paths, the
// error type of a failed call, and the read-index answer.
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { TRAILER_LEADER, UnaryCallError } from '../grpc/unary-call.js';

export { TRAILER_LEADER };

/** StoreCallError is a Store call's failure: a grpc status code, its details, and a leader hint when known. */
export class StoreCallError extends UnaryCallError {}

/** ReadIndexAnswer is what a leader answers a read-index request with. */
export interface ReadIndexAnswer {
  commitSeq: number;
  term: number;
}

/** GetAnswer is what a member answers a Get with: found false (value_json '', version 0) for a missing key. */
export interface GetAnswer {
  found: boolean;
  valueJson: string;
  version: number;
}

export const STORE_METHODS = {
  propose: pb.StoreService.propose.path,
  readIndex: pb.StoreService.readIndex.path,
  proposeBatch: pb.StoreService.proposeBatch.path,
  readIndexStream: pb.StoreService.readIndexStream.path,
  proposeStream: pb.StoreService.proposeStream.path,
  get: pb.StoreService.get.path,
  getStream: pb.StoreService.getStream.path,
} as const;
