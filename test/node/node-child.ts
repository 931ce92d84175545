// A bare store node in a child process (child-harness.ts serves it), so a test can kill -9 it mid-write and
// start it again on the same data directory and ports. argv[2] is the NodeConfig as JSON.
import { Node } from '../../cli/node/node.js';
import { serveNodeChild } from './child-harness.js';

serveNodeChild(async (config) => {
  const node = new Node(config);
  await node.start();
  return { node };
});
