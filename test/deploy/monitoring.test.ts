// deploy/monitoring/: the alert rules pass `promtool check rules` and their unit tests (`promtool test rules`,
// one test per alert); the Grafana dashboard is a dashboard Grafana imports (the fields it needs, panels that do
// not overlap on its 24-column grid, ids unique) whose every query parses as PromQL (promtool, as recording
// rules). That each name they use is one a node exports: test/cluster-api/observability.test.ts, on a real node.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { dump, load } from 'js-yaml';
import {
  concreteExpr,
  dashboardExprs,
  loadAlertRules,
  loadDashboard,
  monitoringDir,
  ruleTestsPath,
  rulesPath,
} from './monitoring-assets.js';

const run = promisify(execFile);

/** promtool runs Debian's promtool (package prometheus, installed by .ci/run); its output is stdout and stderr. */
async function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: monitoringDir, timeout: 60_000 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string };
    if (failed.code === 'ENOENT')
      throw new Error('promtool is not installed (Debian package prometheus; .ci/run installs it)', { cause: error });
    return { code: Number(failed.code ?? 1), output: (failed.stdout ?? '') + (failed.stderr ?? '') };
  }
}

describe('deploy/monitoring: alert rules and the Grafana dashboard', function () {
  this.timeout(120_000);

  it('the alert rules pass promtool check rules', async () => {
    const checked = await promtool('check', 'rules', rulesPath);
    assert.equal(checked.code, 0, checked.output);
    assert.match(checked.output, new RegExp(`SUCCESS: ${loadAlertRules().length} rules found`));
  });

  it('every alert fires in its promtool unit test, which pass', async () => {
    const tested = await promtool('test', 'rules', ruleTestsPath);
    assert.equal(tested.code, 0, tested.output);
    assert.match(tested.output, /SUCCESS/);
    const tests = load(readFileSync(ruleTestsPath, 'utf8')) as {
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const firing = new Set(
      tests.tests.flatMap((test) =>
        test.alert_rule_test.filter((e) => e.exp_alerts.length > 0).map((e) => e.alertname),
      ),
    );
    for (const rule of loadAlertRules()) assert.ok(firing.has(rule.alert), `${rule.alert} has a test where it fires`);
    for (const area of ['NoLeader', 'MemberNotReady', 'CommitLag', 'QueueBacklog', 'WalFsyncSlow'])
      assert.ok(
        loadAlertRules().some((rule) => rule.alert === `Svc${area}`),
        `the rules alert on ${area}`,
      );
  });

  it('a broken rule fails promtool (the check is not vacuous)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-rules-'));
    try {
      const broken = path.join(dir, 'broken.yml');
      writeFileSync(
        broken,
        dump({ groups: [{ name: 'x', rules: [{ alert: 'X', expr: 'sum by (job (svc_ready)' }] }] }),
      );
      assert.notEqual((await promtool('check', 'rules', broken)).code, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the dashboard has what Grafana needs to import it, and its panels tile the grid', () => {
    const dashboard = loadDashboard();
    assert.equal(typeof dashboard.uid, 'string');
    assert.ok(dashboard.uid.length > 0 && dashboard.uid.length <= 40, 'uid: 1 to 40 characters');
    assert.ok(dashboard.title.length > 0);
    assert.ok(Number.isInteger(dashboard.schemaVersion) && dashboard.schemaVersion >= 36);
    const variables = new Map(dashboard.templating.list.map((variable) => [variable.name, variable]));
    assert.equal(variables.get('datasource')?.type, 'datasource');
    assert.equal(variables.get('job')?.type, 'query');
    const ids = dashboard.panels.map((panel) => panel.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const known = new Set(['row', 'stat', 'timeseries', 'state-timeline', 'gauge', 'table', 'bargauge']);
    const taken = new Set<string>();
    for (const panel of dashboard.panels) {
      assert.ok(known.has(panel.type), `${panel.title}: a panel type Grafana ships (${panel.type})`);
      const { x, y, w, h } = panel.gridPos;
      assert.ok(x >= 0 && w > 0 && x + w <= 24 && y >= 0 && h > 0, `${panel.title}: inside the 24-column grid`);
      for (let row = y; row < y + h; row++)
        for (let column = x; column < x + w; column++) {
          assert.ok(!taken.has(`${row}:${column}`), `${panel.title} overlaps another panel at ${row}:${column}`);
          taken.add(`${row}:${column}`);
        }
      if (panel.type === 'row') continue;
      assert.equal(panel.datasource?.uid, '${datasource}', `${panel.title}: reads the chosen data source`);
      assert.ok((panel.targets ?? []).length > 0, `${panel.title}: has a query`);
      const refIds = (panel.targets ?? []).map((target) => target.refId);
      assert.equal(new Set(refIds).size, refIds.length, `${panel.title}: refIds unique`);
      for (const target of panel.targets ?? [])
        assert.match(target.expr, /\{job="\$job"/, `${panel.title}: every selector is of the chosen job`);
    }
    const titles = dashboard.panels.map((panel) => panel.title.toLowerCase()).join(' | ');
    for (const topic of [
      'leader',
      'term',
      'commit lag',
      'applied lag',
      'ready',
      'wal fsync',
      'requests',
      'latency',
      'event streams',
      'queue depth',
    ])
      assert.ok(titles.includes(topic), `a panel on ${topic}`);
  });

  it('every dashboard query parses as PromQL (promtool, as recording rules)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-dashboard-'));
    try {
      const rules = dashboardExprs().map(({ expr }, index) => ({
        record: `dashboard:query_${index}`,
        expr: concreteExpr(expr),
      }));
      const file = path.join(dir, 'dashboard-queries.yml');
      writeFileSync(file, dump({ groups: [{ name: 'dashboard', rules }] }));
      const checked = await promtool('check', 'rules', file);
      assert.equal(checked.code, 0, checked.output);
      assert.match(checked.output, new RegExp(`SUCCESS: ${rules.length} rules found`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
