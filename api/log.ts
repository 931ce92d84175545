// The API logs through pino, the node's logger: a node hands the API a child of its own logger
// (cli/node/node-api.ts), the standalone server (`tsx api/main.ts`) makes one here. Every line is a JSON object
// with `event` (a stable dotted name, e.g. `runs.worker_lost`) beside pino's level, time and `msg`; the caller
// picks the level (`log.warn(...)`), never the logger by matching the message.
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger as ApiLogger };

/**
 * apiLogRedactPaths are the fields censored wherever they appear in a line, at the top level or one object
 * down (pino's redaction, fast-redact: compiled once, paid only by lines that are written). The API never
 * puts these in a line on purpose (it logs ids, not headers or bodies); this is the net under a mistake, such
 * as an error object that carries the request's headers.
 */
export const apiLogRedactPaths: readonly string[] = [
  'authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'err.config.headers.Authorization',
  'err.config.headers.authorization',
  'apiKey',
  'key',
  'secret',
  'secretKey',
  'password',
  'token',
  'value',
  '*.apiKey',
  '*.key',
  '*.secret',
  '*.secretKey',
  '*.password',
  '*.token',
  '*.value',
];

/** apiLogRedaction is the `redact` option of an API logger (root or child). */
export const apiLogRedaction: NonNullable<LoggerOptions['redact']> = {
  paths: [...apiLogRedactPaths],
  censor: '[redacted]',
};

/**
 * createApiLogger makes the standalone server's logger: JSON lines on stderr (or `destination`), with the
 * API's redaction. A node does not call it: it passes its own logger's child (withApiRedaction).
 */
export function createApiLogger(
  level: LoggerOptions['level'] = 'info',
  destination: DestinationStream = pino.destination({ dest: 2, sync: true }),
): Logger {
  return pino(
    {
      level,
      base: { source: 'api' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: apiLogRedaction,
    },
    destination,
  );
}

let stderrLogger: Logger | undefined;

/** defaultApiLogger is one stderr logger for the process (defaultConfig's, when no logger is given). */
export function defaultApiLogger(): Logger {
  return (stderrLogger ??= createApiLogger());
}

/** withApiRedaction is a child of a given logger (a node's) that marks its lines `source: api` and redacts as above. */
export function withApiRedaction(parent: Logger): Logger {
  return parent.child({ source: 'api' }, { redact: apiLogRedaction });
}

/** silentApiLogger writes nothing (benchmarks, tests that do not read logs). */
export function silentApiLogger(): Logger {
  return pino({ level: 'silent' });
}
