// CPU time of other processes, from /proc/<pid>/stat (utime + stime, Linux only): what a cluster's
// members spent serving a measured window, so a bench can report server CPU per operation beside
// throughput (on a shared machine, throughput alone mostly measures the neighbours).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clockTicksPerSecond: number | null = null;

function ticksPerSecond(): number {
  if (clockTicksPerSecond === null) {
    try {
      clockTicksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicksPerSecond = 100;
    }
  }
  return clockTicksPerSecond;
}

/** processCpuMs sums the user and system CPU of pids so far, in ms; a pid that is gone counts 0. */
export function processCpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces, so split after its closing parenthesis).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // not running (or not Linux)
    }
  }
  return (ticks * 1000) / ticksPerSecond();
}

/** cpuDuring samples processCpuMs at two moments (ms from now) while work runs, and resolves the difference. */
export function cpuDuring(pids: readonly number[], fromMs: number, toMs: number): Promise<number> {
  return new Promise((resolve) => {
    let start = 0;
    setTimeout(() => {
      start = processCpuMs(pids);
    }, fromMs);
    setTimeout(() => resolve(processCpuMs(pids) - start), toMs);
  });
}
