// Structured JSON logs with pino. Records carry the node's name; nothing secret is logged (no key
// material, no stored values): only ids, seqnos, addresses and reasons.
import { pino, type Logger } from 'pino';

export type { Logger };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export function createLogger(
  name: string,
  level: LogLevel = 'info',
  destination?: { write(line: string): unknown },
): Logger {
  const options = { level, base: { node: name }, timestamp: pino.stdTimeFunctions.isoTime };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * stdoutDestination is where pino writes when given no destination: fd 1 through sonic-boom, or
 * process.stdout itself when something (a test) replaced its write, as pino itself decides.
 */
export function stdoutDestination(): { write(line: string): unknown } {
  const stdout = process.stdout as NodeJS.WriteStream & { constructor: { prototype: { write: unknown } } };
  if (stdout.write !== stdout.constructor.prototype.write) return process.stdout;
  return pino.destination(process.stdout.fd || 1);
}
