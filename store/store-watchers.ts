// The watchers of a document store (MemoryDocumentStore, the replicated store's state machine): each
// watches a key prefix and hears every change under it, in the order the store made them.
import type { StoreChange, StoreWatcher } from './document-store.js';
import { cloneJson } from './json-clone.js';

export class StoreWatchers {
  private readonly subscriptions = new Set<{ prefix: string; watcher: StoreWatcher }>();

  /** size is the number of watchers (a store skips work nobody would hear). */
  get size(): number {
    return this.subscriptions.size;
  }

  /** add subscribes watcher to the changes under prefix; the function returned unsubscribes it. */
  add(prefix: string, watcher: StoreWatcher): () => void {
    const subscription = { prefix, watcher };
    this.subscriptions.add(subscription);
    return () => {
      this.subscriptions.delete(subscription);
    };
  }

  /** notify tells every watcher of change's prefix, each with its own copy of a put's value. */
  notify(change: StoreChange): void {
    for (const { prefix, watcher } of this.subscriptions) {
      if (!change.key.startsWith(prefix)) continue;
      // A watcher that throws must not undo a committed write nor starve the other watchers.
      try {
        watcher(change.kind === 'put' ? { ...change, value: cloneJson(change.value) } : change);
      } catch {
        // deliberately ignored: see above
      }
    }
  }
}
