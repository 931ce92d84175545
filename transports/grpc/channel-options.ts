// The grpc-js options our servers and client channels run with, derived from GrpcLimits.
//
// Keepalive: both sides ping an idle connection every keepaliveTimeMs, even with no call open
// (permit without calls), and drop it when a ping goes unanswered for keepaliveTimeoutMs. A peer
// that vanished without a FIN (power loss, partition) is thus noticed in about 15 s: the client's
// channel reconnects with back-off, and the server ends the calls it was serving to it and frees them.
// grpc.http2.min_ping_interval_without_data_ms is set for servers that police pings (grpc-core);
// grpc-js 1.14 ignores it, which is why it is kept no larger than our own keepalive interval.
//
// Channelz is off: grpc-js otherwise keeps per-call and per-message statistics (counters, timestamps, a
// Date per call) for a channelz service we never serve, on every heartbeat and every streamed read.
import type { ChannelOptions } from '@grpc/grpc-js';
import type { GrpcLimits } from './limits.js';

export function serverChannelOptions(limits: GrpcLimits): ChannelOptions {
  return {
    'grpc.max_receive_message_length': limits.messageBytesMax,
    'grpc.max_send_message_length': limits.messageBytesMax,
    'grpc.max_concurrent_streams': limits.maxConcurrentStreamsPerConnection,
    'grpc.keepalive_time_ms': limits.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': limits.keepaliveTimeoutMs,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': limits.minPingIntervalWithoutDataMs,
    'grpc.enable_channelz': 0,
  };
}

export function clientChannelOptions(limits: GrpcLimits): ChannelOptions {
  return {
    'grpc.max_receive_message_length': limits.messageBytesMax,
    'grpc.max_send_message_length': limits.messageBytesMax,
    'grpc.keepalive_time_ms': limits.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': limits.keepaliveTimeoutMs,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.initial_reconnect_backoff_ms': limits.initialReconnectBackoffMs,
    'grpc.max_reconnect_backoff_ms': limits.maxReconnectBackoffMs,
    'grpc-node.flow_control_window': limits.flowControlWindowBytes,
    // Each peer gets its own subchannel, so closing one pool never tears down another's connection.
    'grpc.use_local_subchannel_pool': 1,
    'grpc.enable_channelz': 0,
  };
}
