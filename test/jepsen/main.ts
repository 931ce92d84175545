// `make jepsen`: the long form of the Jepsen-style run (options.ts LONG_FORM), printing as it goes.
//   npx tsx test/jepsen/main.ts [--seed N] [--rounds N] [--short] [--no-api-keys]
// Exit 0: linearizable; 1: a violation or an undecided check (the report says which); 2: could not run.
import { launchJepsen } from './launch.js';
import { LONG_FORM, SHORT_FORM, type JepsenOptions } from './options.js';

function numberFlag(name: string): number | undefined {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return undefined;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} needs a non-negative integer`);
  return value;
}

const base = process.argv.includes('--short') ? SHORT_FORM : LONG_FORM;
const options: JepsenOptions = {
  ...base,
  seed: numberFlag('seed') ?? Math.floor(Math.random() * 1_000_000),
  rounds: numberFlag('rounds') ?? base.rounds,
  apiKeys: !process.argv.includes('--no-api-keys'),
};
const outcome = await launchJepsen(options, (line) => console.log(line));
if ('skipped' in outcome) {
  console.error(`jepsen: cannot run here: ${outcome.skipped}`);
  process.exit(2);
}
console.log('');
console.log(outcome.report.text);
console.log('');
console.log(`jepsen: seed ${options.seed}: ${outcome.report.verdict} (rerun: npx tsx test/jepsen/main.ts --seed ${options.seed}${base === SHORT_FORM ? ' --short' : ''}${options.rounds !== base.rounds ? ` --rounds ${options.rounds}` : ''})`);
process.exit(outcome.report.verdict === 'ok' ? 0 : 1);
