// abortableWait ends a start's wait for Redis when its caller stops it. ioredis and BullMQ wait for a server
// without end (their clients retry the connection), and a disconnect() while they retry does not settle the
// wait; so the wait is raced against the caller's AbortSignal, and an abort closes the clients (onAbort), which
// ends their retries. Written here rather than taken from npm (abort-controller-x's abortable is the same race):
// a dozen lines did not warrant a dependency.

/**
 * abortableWait answers `wait`'s outcome, or rejects with signal.reason as soon as `signal` aborts (at once when
 * it already has), after calling onAbort, which closes what `wait` waits on. No signal: `wait` itself.
 */
export function abortableWait<T>(wait: Promise<T>, signal: AbortSignal | undefined, onAbort: () => void): Promise<T> {
  if (signal === undefined) return wait;
  return new Promise<T>((resolve, reject) => {
    const aborted = (): void => {
      onAbort();
      reject(signal.reason as Error);
    };
    // An outcome after the abort is dropped: onAbort has closed what it would have handed over.
    wait.then(
      (value) => {
        signal.removeEventListener('abort', aborted);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', aborted);
        reject(error as Error);
      },
    );
    if (signal.aborted) aborted();
    else signal.addEventListener('abort', aborted, { once: true });
  });
}
