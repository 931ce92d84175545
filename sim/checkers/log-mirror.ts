// Log mirror: what an engine holds in memory (Engine.entries) must be what it
// told its driver to write (append effects), or a restart would lose or invent
// entries. Checked when a run converges (it costs a pass over every log).
import { sameBytes } from '../artifacts.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';

export function checkLogMirror(node: SimNode): void {
  if (!node.engine || node.state !== 'up') return;
  const held = node.engine.entries();
  const written = node.storage.written;
  const heldLast = held.length > 0 ? held[held.length - 1]!.seq : undefined;
  if (heldLast !== undefined && heldLast !== written.lastSeq) {
    violate(
      'engine-contract',
      `${node.name} holds entries up to ${heldLast} in memory but wrote up to ${written.lastSeq}`,
      node.index,
    );
  }
  for (const entry of held) {
    if (entry.seq <= written.base) continue;
    const disk = written.entryAt(entry.seq);
    if (!disk || disk.term !== entry.term || disk.kind !== entry.kind || !sameBytes(disk.data, entry.data)) {
      violate(
        'engine-contract',
        `${node.name} holds (seq ${entry.seq}, term ${entry.term}) in memory but wrote ${disk ? `term ${disk.term}` : 'nothing'} there`,
        node.index,
      );
    }
  }
}
