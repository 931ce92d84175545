// The layer fences of eslint.config.js (docs/architecture.md draws the layers): ESLint, run on probe files
// placed in each folder (lintText with a path; nothing is written), reports an import against the direction
// — static, type-only, re-exported or dynamic — and lets the allowed ones through. Without the fences every
// "fires" case below would come back clean.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FENCE_RULES = new Set(['no-restricted-imports', 'no-restricted-syntax']);

describe('layout: the import direction (eslint.config.js)', function () {
  this.timeout(60_000);
  const eslint = new ESLint({ cwd: repoRoot });

  /** fences lints code as the file at `file` and returns the fence rules it broke. */
  async function fences(file: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: path.join(repoRoot, file) });
    return result!.messages
      .filter((m) => m.ruleId !== null && FENCE_RULES.has(m.ruleId))
      .map((m) => `${m.ruleId}: ${m.message}`);
  }

  const fires: Array<[file: string, code: string]> = [
    ['transports/node/probe.ts', "import { startApiService } from '../../api/server.js';\nvoid startApiService;\n"],
    [
      'transports/grpc/probe.ts',
      "import type { StoreLimits } from '../../store/limits.js';\nexport type L = StoreLimits;\n",
    ],
    ['transports/node/probe.ts', "export { Node } from '../../cli/node/node.js';\n"],
    [
      'transports/node/probe.ts',
      "export async function load(): Promise<unknown> { return import('../../api/server.js'); }\n",
    ],
    ['transports/probe.ts', "import { ReplicatedStore } from '../store/replicated-store.js';\nvoid ReplicatedStore;\n"],
    ['store/probe.ts', "import { UnaryCallError } from '../transports/grpc/unary-call.js';\nvoid UnaryCallError;\n"],
    ['store/probe.ts', "import * as grpc from '@grpc/grpc-js';\nvoid grpc;\n"],
    ['store/probe.ts', "import { runMain } from '../cli/main.js';\nvoid runMain;\n"],
    ['store/probe.ts', "import { createApp } from '../api/app.js';\nvoid createApp;\n"],
    ['api/routes/probe.ts', "import { Node } from '../../cli/node/node.js';\nvoid Node;\n"],
    ['api/probe.ts', "import { PeerServer } from '../transports/grpc/server.js';\nvoid PeerServer;\n"],
    ['engine/probe.ts', "import { DEFAULT_STORE_LIMITS } from '../store/limits.js';\nvoid DEFAULT_STORE_LIMITS;\n"],
    ['engine/probe.ts', "import { Driver } from '../transports/node/driver.js';\nvoid Driver;\n"],
    ['engine/tracker/probe.ts', "import { Cluster } from '../../sim/cluster.js';\nvoid Cluster;\n"],
    ['sim/probe.ts', "import { StoreStateMachine } from '../store/state-machine.js';\nvoid StoreStateMachine;\n"],
    ['sim/checkers/probe.ts', "import { Wal } from '../../transports/storage/wal.js';\nvoid Wal;\n"],
    ['bench/probe.ts', "import { allScenarios } from '../test/scenarios.test.js';\nvoid allScenarios;\n"],
    [
      'bench/cluster/probe.ts',
      "import type { Fixture } from '../../test/api/fixtures.js';\nexport type F = Fixture;\n",
    ],
    [
      'bench/probe.ts',
      "export async function load(): Promise<unknown> { return import('../test/node/node.test.js'); }\n",
    ],
    ['recording/probe.ts', "import { Cluster } from '../sim/cluster.js';\nvoid Cluster;\n"],
    ['recording/probe.ts', "import { Driver } from '../transports/node/driver.js';\nvoid Driver;\n"],
    ['engine/probe.ts', "import { encodeLine } from '../recording/codec.js';\nvoid encodeLine;\n"],
    ['layout/probe.ts', "import type { Entry } from '../engine/types.js';\nexport type E = Entry;\n"],
    ['engine/probe.ts', "import { appFile } from '../layout/app-files.js';\nvoid appFile;\n"],
  ];
  for (const [file, code] of fires) {
    it(`fires on ${file}: ${code.split('\n')[0]}`, async () => {
      const broken = await fences(file, code);
      assert.ok(broken.length > 0, `no fence fired for ${file}`);
      assert.ok(
        broken.some((m) => /must not import|knows no transport|may import of test/.test(m)),
        broken.join('\n'),
      );
    });
  }

  const allowed: Array<[file: string, code: string]> = [
    [
      'transports/grpc/probe.ts',
      "import * as pb from '../../proto/gen/svc/store/v1/store.js';\nimport { DEFAULT_STREAM_IDLE_MS } from '../store-rpc/limits.js';\nimport type { Entry } from '../../engine/types.js';\nexport type E = Entry;\nvoid pb;\nvoid DEFAULT_STREAM_IDLE_MS;\n",
    ],
    [
      'store/probe.ts',
      "import type { Entry } from '../engine/types.js';\nimport * as pb from '../proto/gen/svc/store/v1/store.js';\nexport type E = Entry;\nvoid pb;\n",
    ],
    [
      'api/routes/probe.ts',
      "import type { DocumentStore } from '../../store/document-store.js';\nimport { storeError } from '../store-helpers.js';\nexport type D = DocumentStore;\nvoid storeError;\n",
    ],
    [
      'engine/tracker/probe.ts',
      "import type { Entry } from '../types.js';\nimport * as pb from '../../proto/gen/svc/replication/v1/replication.js';\nexport type E = Entry;\nvoid pb;\n",
    ],
    [
      'cli/node/probe.ts',
      "import { startApiService } from '../../api/server.js';\nimport { StoreRouter } from '../../store/store-router.js';\nimport { Driver } from '../../transports/node/driver.js';\nvoid startApiService;\nvoid StoreRouter;\nvoid Driver;\n",
    ],
    ['sim/probe.ts', "import type { Entry } from '../engine/types.js';\nexport type E = Entry;\n"],
    ['transports/node/probe.ts', "import { appFile } from '../../layout/app-files.js';\nvoid appFile;\n"],
    [
      'bench/cluster/probe.ts',
      "import { InProcessCluster } from '../../test/node/in-process-cluster.js';\nimport { Engine } from '../../engine/engine.js';\nvoid InProcessCluster;\nvoid Engine;\n",
    ],
  ];
  for (const [file, code] of allowed) {
    it(`lets ${file} import what its layer may`, async () => {
      assert.deepEqual(await fences(file, code), []);
    });
  }
});
