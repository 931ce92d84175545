// `make jepsen`: the long form of the Jepsen-style run (options.ts LONG_FORM), printing as it goes.
//   npx tsx test/jepsen/main.ts [--seed N] [--rounds N] [--short] [--schedule kind,kind,…] [--tick-ms N] [--no-api-keys]
// --schedule replaces the form's first rounds (kinds: see nemesis.ts NEMESIS_KINDS); later rounds draw kinds.
// Exit 0: linearizable; 1: a violation or an undecided check (the report says which); 2: could not run.
import { launchJepsen } from './launch.js';
import { LONG_FORM, SHORT_FORM, type JepsenOptions } from './options.js';
import { NEMESIS_KINDS, type NemesisKind } from './nemesis.js';

function scheduleFlag(): NemesisKind[] | undefined {
  const at = process.argv.indexOf('--schedule');
  if (at < 0) return undefined;
  const kinds = (process.argv[at + 1] ?? '').split(',');
  const unknown = kinds.filter((k) => !(NEMESIS_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw new Error(`--schedule: unknown kinds ${unknown.join(', ')}; known: ${NEMESIS_KINDS.join(', ')}`);
  return kinds as NemesisKind[];
}

function numberFlag(name: string): number | undefined {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return undefined;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} needs a non-negative integer`);
  return value;
}

const base = process.argv.includes('--short') ? SHORT_FORM : LONG_FORM;
const schedule = scheduleFlag();
const options: JepsenOptions = {
  ...base,
  schedule: schedule ?? base.schedule,
  seed: numberFlag('seed') ?? Math.floor(Math.random() * 1_000_000),
  rounds: numberFlag('rounds') ?? schedule?.length ?? base.rounds,
  apiKeys: !process.argv.includes('--no-api-keys'),
  tickMs: numberFlag('tick-ms') ?? base.tickMs,
};
const outcome = await launchJepsen(options, (line) => console.log(line));
if ('skipped' in outcome) {
  console.error(`jepsen: cannot run here: ${outcome.skipped}`);
  process.exit(2);
}
console.log('');
console.log(outcome.report.text);
console.log('');
console.log(
  `jepsen: seed ${options.seed}: ${outcome.report.verdict} (rerun: npx tsx test/jepsen/main.ts --seed ${options.seed}${base === SHORT_FORM ? ' --short' : ''}${schedule ? ` --schedule ${schedule.join(',')}` : ''}${options.rounds !== base.rounds ? ` --rounds ${options.rounds}` : ''})`,
);
process.exit(outcome.report.verdict === 'ok' ? 0 : 1);
