// Io is where a command writes: stdout and stderr in the real command, buffers in tests.
export interface Io {
  out: { write(text: string): unknown };
  err: { write(text: string): unknown };
}

export const processIo: Io = { out: process.stdout, err: process.stderr };
