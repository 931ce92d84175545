// VersionSpread watches the build_version values heartbeats carry. A major-version
// gap is worth a warning (two majors: loudly); it never rejects a peer, and an
// empty version is "unknown", never a mismatch.
export class VersionSpread {
  private readonly seen = new Map<number, string>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly ownId: () => number,
    private readonly ownVersion: string,
  ) {}

  /** observe records a peer's version and returns a warning message when a new major gap appears. */
  observe(peerId: number, version: string): string | null {
    if (version === '') return null;
    this.seen.set(peerId, version);
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

  snapshot(): Record<number, string> {
    const out: Record<number, string> = {};
    for (const [id, v] of [...this.seen.entries()].sort((a, b) => a[0] - b[0])) out[id] = v;
    return out;
  }
}

function majorOf(version: string): number | null {
  const match = /^v?(\d+)\.\d+\.\d+/.exec(version);
  return match ? Number(match[1]) : null;
}
