// The monitoring files of deploy/monitoring/ as the tests read them: the Grafana dashboard's panels and queries,
// the alert rules' expressions, the metric names a PromQL expression uses, and the names a /metrics page declares.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';

export const monitoringDir = fileURLToPath(new URL('../../deploy/monitoring/', import.meta.url));
export const dashboardPath = `${monitoringDir}grafana-dashboard.json`;
export const rulesPath = `${monitoringDir}prometheus-rules.yml`;
export const ruleTestsPath = `${monitoringDir}prometheus-rules.test.yml`;

export interface DashboardTarget {
  refId: string;
  expr: string;
  legendFormat?: string;
  datasource?: { type: string; uid: string };
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: DashboardTarget[];
  datasource?: { type: string; uid: string };
}

export interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: DashboardPanel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown }> };
}

export function loadDashboard(): Dashboard {
  return JSON.parse(readFileSync(dashboardPath, 'utf8')) as Dashboard;
}

/** dashboardExprs lists every query of the dashboard, with its panel's title. */
export function dashboardExprs(dashboard: Dashboard = loadDashboard()): Array<{ panel: string; expr: string }> {
  return dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
  );
}

/**
 * concreteExpr replaces Grafana's variables by values Prometheus accepts ($__rate_interval: a range; $job: the
 * job), so the query can be parsed by promtool.
 */
export function concreteExpr(expr: string): string {
  return expr.replaceAll('$__rate_interval', '5m').replaceAll('$job', 'svc');
}

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function loadAlertRules(): AlertRule[] {
  const file = load(readFileSync(rulesPath, 'utf8')) as { groups: Array<{ name: string; rules: AlertRule[] }> };
  return file.groups.flatMap((group) => group.rules);
}

/**
 * prometheusOwnMetrics are names Prometheus itself makes (not the node's): `up`, one per scrape target.
 */
export const prometheusOwnMetrics: ReadonlySet<string> = new Set(['up']);

/**
 * metricNamesIn lists the metric names an expression selects: identifiers before a `{` selector, or standing
 * alone, that are not PromQL's functions, aggregations, keywords or label names in by/on/without lists. Our
 * names all begin svc_, so the scan is checked by the test for every name it finds: unknown ones fail it.
 */
export function metricNamesIn(expr: string): string[] {
  const withoutStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  // Label lists of by/on/without/ignoring/group_left/group_right and label matchers inside {} hold label names.
  const withoutLabels = withoutStrings
    .replace(/\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = new Set<string>();
  for (const match of withoutLabels.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = match[0];
    const next = withoutLabels.slice(match.index + word.length).trimStart();
    if (next.startsWith('(')) continue; // a function or an aggregation
    if (promqlWords.has(word)) continue;
    names.add(word);
  }
  return [...names];
}

const promqlWords = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/**
 * declaredMetricNames lists the sample names a Prometheus text page can carry: each `# TYPE` family, and for a
 * histogram its _bucket, _sum and _count (a labelled family with no sample yet is still declared).
 */
export function declaredMetricNames(page: string): Set<string> {
  const names = new Set<string>();
  for (const match of page.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

/** sampleValue reads one sample of a Prometheus text page by its exact series text (`name{a="b",c="d"}`), or undefined. */
export function sampleValue(page: string, series: string): number | undefined {
  for (const line of page.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}
