// The kinds of value a setting holds (a config file key, a flag or an environment variable), each a zod schema
// with the words the docs use for it and the reading of a flag's or a variable's text. The API's variables
// (env-settings.ts) and the node's whole schema (cli/node/config-schema.ts) are declared with these; api/ holds
// them because it is the lowest layer that reads the environment and cli/ may import it, not the other way.
import { z } from 'zod';

/** SettingKind is one kind of value: its schema (the value as a JSON/YAML file holds it) and its text forms. */
export interface SettingKind {
  schema: z.ZodType;
  /** typeText is the type as the docs' table and `--help` say it. */
  typeText: string;
  /** fromText reads a flag's or a variable's text; what it cannot read it returns as is, for the schema to refuse. */
  fromText(text: string): unknown;
  /** toText writes a value back as a variable's text (the node hands the API its settings as variables). */
  toText(value: unknown): string;
}

const asText = (value: unknown): string => String(value);

/** text: a non-empty string. */
export function text(what = 'a non-empty string'): SettingKind {
  return {
    schema: z.string({ error: `must be ${what}` }).refine((s) => s.trim() !== '', { error: 'must not be empty' }),
    typeText: what,
    fromText: (t) => t,
    toText: asText,
  };
}

/** wholeNumber: an integer from min to max (a safe integer: JSON and the limits hold doubles). */
export function wholeNumber(min: number, max: number): SettingKind {
  return {
    schema: z
      .number({ error: 'must be a whole number' })
      .int({ error: 'must be a whole number' })
      .min(min, { error: `must be from ${min} to ${max}` })
      .max(max, { error: `must be from ${min} to ${max}` }),
    typeText: `integer ${min}..${max}`,
    fromText: (t) => (/^\d+$/.test(t) ? Number(t) : t),
    toText: asText,
  };
}

/** positiveInteger: a whole number from 1 to max, refused as "a positive integer". */
export function positiveInteger(max = Number.MAX_SAFE_INTEGER): SettingKind {
  const problem = `must be a positive integer (at most ${max})`;
  return {
    schema: z
      .number({ error: problem })
      .int({ error: problem })
      .min(1, { error: problem })
      .max(max, { error: problem }),
    typeText: `integer 1..${max}`,
    fromText: (t) => (/^\d+$/.test(t) ? Number(t) : t),
    toText: asText,
  };
}

/** onOff: true or false; as text `1`/`true` or `0`/`false` (anything else is refused, not read as false). */
export function onOff(): SettingKind {
  return {
    schema: z.boolean({ error: 'must be true or false (as text: 1 or 0)' }),
    typeText: 'boolean (text: 1/0)',
    fromText: (t) => (t === '1' || t === 'true' ? true : t === '0' || t === 'false' ? false : t),
    toText: (v) => (v === true ? '1' : '0'),
  };
}

/** oneOf: one of the given words. */
export function oneOf(values: readonly string[]): SettingKind {
  return {
    schema: z.enum(values as [string, ...string[]], { error: `must be one of ${values.join(', ')}` }),
    typeText: values.join(' | '),
    fromText: (t) => t,
    toText: asText,
  };
}

/** list: strings; as text, comma-separated (blank entries dropped). accepts, when given, checks each entry. */
export function list(item = 'string', accepts?: (entry: string) => boolean): SettingKind {
  let entry = z.string({ error: `must list ${item}s` }).min(1, { error: 'must not hold an empty entry' });
  if (accepts) entry = entry.refine(accepts, { error: `must list ${item}s` }) as unknown as typeof entry;
  return {
    schema: z.array(entry, { error: `must be a list of ${item}s` }),
    typeText: `list of ${item}s (text: comma-separated)`,
    fromText: (t) =>
      t
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    toText: (v) => (v as string[]).join(','),
  };
}

/** succeeds: whether a parser accepts the text (for list's accepts). */
export function succeeds(parse: (text: string) => unknown): (text: string) => boolean {
  return (text) => {
    try {
      return parse(text) !== null;
    } catch {
      return false;
    }
  };
}

/** matching: a string the pattern accepts (what names the form, e.g. "a CPU quantity such as 1 or 500m"). */
export function matching(pattern: RegExp, what: string): SettingKind {
  return {
    schema: z.string({ error: `must be ${what}` }).regex(pattern, { error: `must be ${what}` }),
    typeText: what,
    fromText: (t) => t,
    toText: asText,
  };
}

/** checkKind validates a value against a kind: null when it fits, else the problem ("must be …"). */
export function kindProblem(kind: SettingKind, value: unknown): string | null {
  const result = kind.schema.safeParse(value);
  if (result.success) return null;
  return result.error.issues[0]?.message ?? 'is not valid';
}
