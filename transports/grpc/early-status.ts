// earlyStatus: a server interceptor that sends a unary answer's status right behind its message. grpc-js's unary
// handler sends the status (the trailers a caller waits for) from the write callback of the answer's message,
// which runs a loop turn after the message left; on a busy node that turn holds whatever else the loop has (the
// other follower's ReportApplied, held commit notices, the recorder's encoding), and the caller, woken by the
// message, sleeps again until the trailers come. Queued right behind the message on the same HTTP/2 stream, the
// status cannot pass it. A message whose write then fails has a broken stream under it: the caller sees the
// stream reset, as it would have seen an INTERNAL status on it before.
//
// The wrapper keeps the base call's `stream` readable (peer-identity.ts's connectionOf keys the certificate
// cache on its session).
import type * as grpc from '@grpc/grpc-js';

type InterceptingCall = grpc.ServerInterceptingCallInterface;
type Listener = Parameters<InterceptingCall['start']>[0];
type Status = Parameters<InterceptingCall['sendStatus']>[0];

class EarlyStatusCall implements InterceptingCall {
  readonly stream: unknown;

  constructor(private readonly inner: InterceptingCall) {
    this.stream = (inner as { stream?: unknown }).stream;
  }

  start(listener: Listener): void {
    this.inner.start(listener);
  }
  sendMetadata(metadata: grpc.Metadata): void {
    this.inner.sendMetadata(metadata);
  }
  sendMessage(message: unknown, callback: () => void): void {
    this.inner.sendMessage(message, () => undefined);
    callback();
  }
  sendStatus(status: Status): void {
    this.inner.sendStatus(status);
  }
  startRead(): void {
    this.inner.startRead();
  }
  getPeer(): string {
    return this.inner.getPeer();
  }
  getDeadline(): ReturnType<InterceptingCall['getDeadline']> {
    return this.inner.getDeadline();
  }
  getHost(): string {
    return this.inner.getHost();
  }
  getAuthContext(): ReturnType<InterceptingCall['getAuthContext']> {
    return this.inner.getAuthContext();
  }
  getConnectionInfo(): ReturnType<InterceptingCall['getConnectionInfo']> {
    return this.inner.getConnectionInfo();
  }
  getMetricsRecorder(): ReturnType<InterceptingCall['getMetricsRecorder']> {
    return this.inner.getMetricsRecorder();
  }
}

/** earlyStatus wraps unary calls only: a stream's status must wait for its messages' flow control. */
// grpc-js types an interceptor's result as its own ServerInterceptingCall class; it uses only the interface.
export const earlyStatus: grpc.ServerInterceptor = (method, call) =>
  method.requestStream || method.responseStream
    ? (call as grpc.ServerInterceptingCall)
    : (new EarlyStatusCall(call) as unknown as grpc.ServerInterceptingCall);
