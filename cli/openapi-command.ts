// `svc openapi`: the developer API's OpenAPI document on stdout, straight from the code. Only the
// document module is loaded: no server starts and no port opens.
import { printOpenApi } from '../api/openapi/document.js';
import { parseFlags } from './flags.js';
import type { Io } from './io.js';
import { EXIT_OK } from './limits.js';
import { OPENAPI_USAGE } from './usage.js';

export function runOpenApiCommand(args: string[], io: Io): number {
  const { values } = parseFlags(args, { help: { type: 'boolean' } });
  if (values.help === true) {
    io.out.write(`${OPENAPI_USAGE}\n`);
    return EXIT_OK;
  }
  const text = printOpenApi();
  io.out.write(text.endsWith('\n') ? text : `${text}\n`);
  return EXIT_OK;
}
