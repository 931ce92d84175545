// grpc-js channels to peers resolve their host names through the node's PeerNames (c-ares, cancelled at the
// stop: transports/node/peer-names.ts) rather than grpc-js's own DNS resolver, which calls dns.lookup
// (getaddrinfo in libuv's threadpool): a lookup there cannot be cancelled and the process's exit waits for it, so
// a joiner or follower whose seed's or leader's name the DNS did not answer lived on after its stop.
//
// A channel opts in with PEER_NAMES_OPTION in its options (the node's peer channel options carry it); grpcTarget
// then names the `svc-peer` scheme, whose resolver (registered here with grpc-js) looks the name up through it.
// Without the option the target is the address itself (grpc-js's DNS resolver); the admin commands opt in too
// (transports/admin/admin-client.ts).
import * as grpc from '@grpc/grpc-js';
import { isIP } from 'node:net';
import type { PeerNames } from '../node/peer-names.js';

/** PEER_SCHEME is the grpc-js target scheme of channels whose names PeerNames looks up. */
export const PEER_SCHEME = 'svc-peer';
/** PEER_NAMES_OPTION is the channel option that carries the PeerNames (not sent: grpc-js keeps options local). */
export const PEER_NAMES_OPTION = 'svc.peer_names';
/**
 * RESOLUTION_INTERVAL_MS is the least time between two lookups of one channel's name: a channel asks again
 * whenever a connection fails, and its reconnect back-off starts at 200 ms (grpcLimits.initialReconnectBackoffMs).
 */
export const RESOLUTION_INTERVAL_MS = 1_000;

/** grpcTarget is the target a grpc-js channel to `address` (host:port) is created with, under `options`. */
export function grpcTarget(address: string, options: grpc.ChannelOptions | undefined): string {
  return options?.[PEER_NAMES_OPTION] instanceof Object ? `${PEER_SCHEME}:${address}` : address;
}

type Listener = Parameters<typeof grpc.experimental.createResolver>[1];
type Target = Parameters<typeof grpc.experimental.createResolver>[0];

/** PeerNameResolver is the `svc-peer` scheme's grpc-js resolver: one lookup at a time, RESOLUTION_INTERVAL_MS apart. */
class PeerNameResolver implements grpc.experimental.Resolver {
  private readonly host: string | null;
  private readonly port: number;
  private readonly names: PeerNames | null;
  /** generation changes at destroy(): a lookup started before it reports nothing. */
  private generation = 0;
  private looking = false;
  private again = false;
  private lastStartedAt = -Infinity;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    target: Target,
    private readonly listener: Listener,
    options: grpc.ChannelOptions,
  ) {
    const hostPort = grpc.experimental.splitHostPort(target.path);
    this.host = hostPort?.host ?? null;
    this.port = hostPort?.port ?? 0;
    const names: unknown = options[PEER_NAMES_OPTION];
    this.names = names instanceof Object && 'addresses' in names ? (names as PeerNames) : null;
  }

  updateResolution(): void {
    if (this.looking || this.timer !== null) {
      this.again = true;
      return;
    }
    const waitMs = this.lastStartedAt + RESOLUTION_INTERVAL_MS - Date.now();
    if (waitMs > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.updateResolution();
      }, waitMs);
      this.timer.unref();
      return;
    }
    this.again = false;
    this.looking = true;
    this.lastStartedAt = Date.now();
    const generation = this.generation;
    void this.lookUp().then((result) => {
      if (generation !== this.generation) return;
      this.looking = false;
      this.listener(result, {}, null, '');
      if (this.again) this.updateResolution();
    });
  }

  destroy(): void {
    this.generation++;
    this.looking = false;
    this.again = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  static getDefaultAuthority(target: Target): string {
    return target.path;
  }

  private async lookUp(): Promise<grpc.experimental.StatusOr<grpc.experimental.Endpoint[]>> {
    const unavailable = (details: string) =>
      grpc.experimental.statusOrFromError<grpc.experimental.Endpoint[]>({
        code: grpc.status.UNAVAILABLE,
        details,
        metadata: new grpc.Metadata(),
      });
    if (this.host === null || this.port === 0) return unavailable('a peer address is host:port');
    if (this.names === null && isIP(this.host) === 0)
      return unavailable(`no ${PEER_NAMES_OPTION} channel option to look ${this.host} up with`);
    try {
      const found = this.names ? await this.names.addresses(this.host) : [{ address: this.host }];
      return grpc.experimental.statusOrFromValue(
        found.map(({ address }) => ({ addresses: [{ host: address, port: this.port }] })),
      );
    } catch (err) {
      return unavailable(err instanceof Error ? err.message : String(err));
    }
  }
}

grpc.experimental.registerResolver(PEER_SCHEME, PeerNameResolver);
