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
