// `svc node --help`, made from the configuration schema (config-schema.ts): every flag with its setting's doc and
// default, then the variables.
import { COMMAND_FLAGS, defaultWords, NODE_SETTINGS, OTHER_ENV, SECTION_FLAGS } from './config-schema.js';

/** HELP_WIDTH: --help's lines are wrapped to this many columns; HELP_LEFT is its flag column. */
const HELP_WIDTH = 110;
const HELP_LEFT = 32;

function wrapped(left: string, right: string): string[] {
  const words = right.split(' ');
  const lines: string[] = [];
  let line = `  ${left}`.padEnd(HELP_LEFT);
  if (line.length > HELP_LEFT) {
    lines.push(line);
    line = ''.padEnd(HELP_LEFT);
  }
  let empty = true;
  for (const word of words) {
    if (!empty && line.length + 1 + word.length > HELP_WIDTH) {
      lines.push(line);
      line = ''.padEnd(HELP_LEFT);
      empty = true;
    }
    line += `${empty ? '' : ' '}${word}`;
    empty = false;
  }
  lines.push(line);
  return lines;
}

/** nodeUsage is `svc node --help`, from the schema: every flag with its setting's doc, then the variables. */
export function nodeUsage(): string {
  const lines: string[] = [
    'usage: svc node [--config FILE] [flags]',
    '',
    'Every setting is a config file key (JSON or YAML; relative paths in it are relative to the file); many',
    'also have a flag or a variable. A value comes from, in rising order: its default, the file, the',
    'environment, a flag. Unknown keys, flags and SVC_* variables and bad values are refused (exit 2).',
    'docs/configuration.md lists every setting.',
    '',
  ];
  const row = (left: string, right: string): void => {
    lines.push(...wrapped(left, right));
  };
  for (const command of COMMAND_FLAGS)
    row(`--${command.flag}${'metavar' in command ? ` ${command.metavar}` : ''}`, command.doc);
  const shown = new Set<string>();
  for (const setting of NODE_SETTINGS) {
    for (const use of setting.flags ?? []) {
      if (shown.has(use.flag)) continue;
      shown.add(use.flag);
      const sharers = NODE_SETTINGS.filter((s) => s.flags?.some((f) => f.flag === use.flag)).map((s) => s.key);
      if ('sets' in use) {
        row(`--${use.flag}`, `${use.doc} (${sharers.join(', ')}: ${JSON.stringify(use.sets)})`);
        continue;
      }
      const doc = setting.doc || `sets ${setting.key}`;
      const repeat = use.repeat ? ', repeatable' : '';
      row(`--${use.flag} ${use.metavar}`, `${doc} (${setting.key}${repeat}; default ${defaultWords(setting)})`);
    }
  }
  for (const { flag, section } of SECTION_FLAGS) row(`--${flag} NAME=N`, `any ${section}.NAME (repeatable)`);
  lines.push('', 'environment (a variable overrides the file; a flag overrides the variable):');
  for (const setting of NODE_SETTINGS) if (setting.env) row(setting.env, setting.key);
  row('other SVC_* allowed', `${OTHER_ENV.map((o) => o.env).join(', ')} (read by other programs)`);
  return lines.join('\n');
}
