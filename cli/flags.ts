// Flag parsing for every subcommand: node:util parseArgs in strict mode, with each problem turned
// into a UsageError that names the flag (exit code 2).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './usage.js';

export type FlagSpec = NonNullable<ParseArgsConfig['options']>;
export type FlagValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

export interface ParsedFlags {
  values: FlagValues;
  positionals: string[];
}

export function parseFlags(args: string[], options: FlagSpec, positionalCountMax = 0): ParsedFlags {
  let parsed: ParsedFlags;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: positionalCountMax > 0 }) as ParsedFlags;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.positionals.length > positionalCountMax) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionalCountMax])}`);
  }
  return parsed;
}

export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new UsageError(`--${name} takes a value`);
  if (value.trim() === '') throw new UsageError(`--${name} must not be empty`);
  return value;
}

export function listFlag(values: FlagValues, name: string): string[] {
  const value = values[name];
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  for (const item of list) {
    if (typeof item !== 'string' || item.trim() === '') throw new UsageError(`--${name} must not be empty`);
  }
  return list as string[];
}

/** intFlag reads a whole number within [min, max], naming the flag when it is not one. */
export function intFlag(values: FlagValues, name: string, min: number, max: number): number | undefined {
  const text = stringFlag(values, name);
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${name} must be a whole number, got ${JSON.stringify(text)}`);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new UsageError(`--${name} must be from ${min} to ${max}, got ${text}`);
  return value;
}

/** limitOverrides reads repeated NAME=N flags into {NAME: N}. */
export function limitOverrides(values: FlagValues, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of listFlag(values, name)) {
    const match = /^([A-Za-z][A-Za-z0-9]*)=(\d+)$/.exec(item);
    if (!match)
      throw new UsageError(`--${name} takes NAME=N (a limit's name and a whole number), got ${JSON.stringify(item)}`);
    const value = Number(match[2]);
    if (!Number.isSafeInteger(value)) throw new UsageError(`--${name} ${match[1]} is too large`);
    out[match[1]!] = value;
  }
  return out;
}
