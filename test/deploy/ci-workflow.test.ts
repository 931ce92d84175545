// The GitHub Actions workflow stays a thin shell around .ci/run: its test job runs `bash .ci/run` on pushes and
// pull requests, and only a v* tag builds the image, from deploy/Containerfile, checking the tag is the version.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import yaml from 'js-yaml';

interface Step {
  run?: string;
  uses?: string;
}
interface Job {
  if?: string;
  needs?: string;
  steps: Step[];
}
interface Workflow {
  on: { push: { branches: string[]; tags: string[] }; pull_request: unknown };
  jobs: Record<string, Job>;
}

describe('.github/workflows/ci.yml', () => {
  it('runs .ci/run on push and pull request, and builds the image on a v* tag only', async () => {
    const workflow = yaml.load(
      await readFile(new URL('../../.github/workflows/ci.yml', import.meta.url), 'utf8'),
    ) as Workflow;
    assert.deepEqual(workflow.on.push.tags, ['v*']);
    assert.ok('pull_request' in workflow.on);
    const { test, image } = workflow.jobs;
    assert.ok(test && image);
    assert.equal(test.if, undefined, 'the tests run on every event');
    assert.ok(test.steps.some((step) => /\bbash \.ci\/run$/.test(step.run ?? '')));
    assert.equal(image.if, "startsWith(github.ref, 'refs/tags/v')");
    assert.equal(image.needs, 'test');
    const build = image.steps.map((step) => step.run ?? '').join('\n');
    assert.match(build, /make image-context/);
    assert.match(build, /build -f deploy\/Containerfile/);
    assert.match(build, /require\('\.\/package\.json'\)\.version/);
  });
});
