// Allocation probe (bench only, loaded into a member with `--node-option=--import=<this file>` and
// ALLOC_PROBE_DIR set): the first SIGUSR2 starts V8's sampling heap profiler counting every allocation, also
// the objects a scavenge or a mark-compact has already freed (node's --heap-prof keeps only what is still
// live, which hides the short-lived garbage that drives scavenges); the second writes the profile to
// ALLOC_PROBE_DIR/<pid>.heapprofile (Chrome DevTools loads it) and stops. At start it writes
// ALLOC_PROBE_DIR/<pid>.argv so the bench can tell the members apart.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.ALLOC_PROBE_DIR;
/** SAMPLING_INTERVAL_BYTES: V8's mean bytes between samples (its default is 32 KiB). */
const SAMPLING_INTERVAL_BYTES = 16_384;
if (dir) {
  writeFileSync(join(dir, `${process.pid}.argv`), process.argv.join(' '));
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));
  let sampling = false;
  process.on('SIGUSR2', () => {
    if (!sampling) {
      sampling = true;
      void post('HeapProfiler.enable').then(() =>
        post('HeapProfiler.startSampling', {
          samplingInterval: SAMPLING_INTERVAL_BYTES,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        }),
      );
      return;
    }
    void post('HeapProfiler.getSamplingProfile').then(({ profile }) => {
      writeFileSync(join(dir, `${process.pid}.heapprofile`), JSON.stringify(profile));
      return post('HeapProfiler.stopSampling');
    });
  });
}
