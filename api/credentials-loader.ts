// loadCredentials reads an operator secrets file (YAML or JSON: category → name → value) and loads it through
// the HTTP API with an admin key. It is idempotent: a credential that exists (same category and name) is
// updated, never duplicated. Secret values are never printed.
import { JSON_SCHEMA, load as loadYaml } from 'js-yaml';
import { credentialCategories, isCredentialCategory } from './credentials/categories.js';
import { credentialValueLengthMax, nameLengthMax, pageLimitMax } from './limits.js';

/** loaderPagesMax bounds the listing pages read before loading (pageLimitMax credentials each). */
export const loaderPagesMax = 1000;

export interface SecretEntry {
  category: string;
  name: string;
  value: string;
}

export interface LoadReport {
  created: string[];
  updated: string[];
}

/** parseSecretsFile accepts JSON or YAML and checks every entry before anything is sent. */
export function parseSecretsFile(text: string): SecretEntry[] {
  let parsed: unknown;
  try {
    parsed = loadYaml(text, { schema: JSON_SCHEMA });
  } catch (error) {
    // js-yaml quotes the offending line, which may hold a secret: report the position only.
    const mark = (error as { mark?: { line?: number } }).mark;
    // eslint-disable-next-line preserve-caught-error -- the cause would carry the secret-bearing line
    throw new Error(`secrets file is neither JSON nor YAML (line ${(mark?.line ?? -1) + 1})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error('secrets file must map category → name → value');
  }
  const entries: SecretEntry[] = [];
  for (const [category, names] of Object.entries(parsed as Record<string, unknown>)) {
    if (!isCredentialCategory(category)) {
      throw new Error(`unknown category ${JSON.stringify(category)}; allowed: ${credentialCategories.join(', ')}`);
    }
    if (names === null || typeof names !== 'object' || Array.isArray(names)) {
      throw new Error(`category ${category} must map names to values`);
    }
    for (const [name, value] of Object.entries(names as Record<string, unknown>)) {
      if (name.length === 0 || name.length > nameLengthMax) throw new Error(`${category}: bad name length`);
      if (typeof value !== 'string' && typeof value !== 'number') {
        throw new Error(`${category}/${name}: the value must be a string`);
      }
      const text = String(value);
      if (text.length === 0 || text.length > credentialValueLengthMax) {
        throw new Error(`${category}/${name}: the value must be 1..${credentialValueLengthMax} characters`);
      }
      entries.push({ category, name, value: text });
    }
  }
  return entries;
}

export interface LoaderOptions {
  baseUrl: string;
  apiKey: string;
  entries: SecretEntry[];
}

async function request(
  options: LoaderOptions,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(new URL(path, options.baseUrl), {
    method,
    headers: { 'x-api-key': options.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: response.status, json };
}

function failure(what: string, result: { status: number; json: unknown }): Error {
  const body = result.json as { code?: string; message?: string } | null;
  return new Error(`${what}: HTTP ${result.status} ${body?.code ?? ''} ${body?.message ?? ''}`.trim());
}

async function existingIds(options: LoaderOptions): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  let cursor: string | null = null;
  for (let pageIndex = 0; pageIndex < loaderPagesMax; pageIndex++) {
    const query: string = `/credentials?limit=${pageLimitMax}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const result = await request(options, 'GET', query);
    if (result.status !== 200) throw failure('listing credentials', result);
    const page = result.json as {
      items: Array<{ id: string; category: string; name: string }>;
      next_cursor: string | null;
    };
    for (const item of page.items) ids.set(`${item.category}\u0000${item.name}`, item.id);
    cursor = page.next_cursor;
    if (cursor === null) return ids;
  }
  throw new Error(`more than ${loaderPagesMax} pages of credentials`);
}

export async function loadCredentials(options: LoaderOptions): Promise<LoadReport> {
  const ids = await existingIds(options);
  const report: LoadReport = { created: [], updated: [] };
  for (const entry of options.entries) {
    const label = `${entry.category}/${entry.name}`;
    let id = ids.get(`${entry.category}\u0000${entry.name}`);
    if (id === undefined) {
      const created = await request(options, 'POST', '/credentials', entry);
      if (created.status === 201) {
        report.created.push(label);
        continue;
      }
      // 409: someone created it since the listing; fall through to an update.
      if (created.status !== 409) throw failure(`creating ${label}`, created);
      id = (await existingIds(options)).get(`${entry.category}\u0000${entry.name}`);
      if (id === undefined) throw failure(`creating ${label}`, created);
    }
    const updated = await request(options, 'PATCH', `/credentials/${encodeURIComponent(id)}`, { value: entry.value });
    if (updated.status !== 200) throw failure(`updating ${label}`, updated);
    report.updated.push(label);
  }
  return report;
}
