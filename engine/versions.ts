// VersionSpread watches the build_version values heartbeats carry. A major-version
// gap is worth a warning (two majors: loudly); it never rejects a peer, and an
// empty version is "unknown", never a mismatch.
export class VersionSpread {
  private readonly seen = new Map<number, string>();
  private readonly warned = new Set<string>();
  /** record: `seen` as snapshot() hands it out, built once per change (null = stale). */
  private record: Record<number, string> | null = null;

  constructor(
    private readonly ownId: () => number,
    private readonly ownVersion: string,
  ) {}

  /** observe records a peer's version and returns a warning message when a new major gap appears. */
  observe(peerId: number, version: string): string | null {
    if (version === '') return null;
    if (this.seen.get(peerId) !== version) {
      this.seen.set(peerId, version);
      this.record = null;
    }
    const ownMajor = majorOf(this.ownVersion);
    const peerMajor = majorOf(version);
    if (ownMajor === null || peerMajor === null || ownMajor === peerMajor) return null;
    const gap = Math.abs(ownMajor - peerMajor);
    const key = `${Math.min(ownMajor, peerMajor)}-${Math.max(ownMajor, peerMajor)}`;
    if (this.warned.has(key)) return null;
    this.warned.add(key);
    const loud = gap >= 2 ? 'LOUD: ' : '';
    return `${loud}build_version major mismatch: member ${this.ownId()} runs ${this.ownVersion}, member ${peerId} runs ${version} (gap ${gap}); not rejected`;
  }

  /** snapshot: the versions seen by member id, one frozen object until one changes (status() reads it per step). */
  snapshot(): Record<number, string> {
    if (this.record !== null) return this.record;
    const out: Record<number, string> = {};
    for (const [id, v] of [...this.seen.entries()].sort((a, b) => a[0] - b[0])) out[id] = v;
    this.record = Object.freeze(out);
    return this.record;
  }
}

function majorOf(version: string): number | null {
  const match = /^v?(\d+)\.\d+\.\d+/.exec(version);
  return match ? Number(match[1]) : null;
}
