// Io is where a command writes (stdout and stderr in the real command, buffers in tests) and the environment it reads.
export interface Io {
  out: { write(text: string): unknown };
  err: { write(text: string): unknown };
  /** env is the environment a command reads its settings from (default process.env; tests pass their own). */
  env?: NodeJS.ProcessEnv;
}

export const processIo: Io = { out: process.stdout, err: process.stderr };
