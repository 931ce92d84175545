// The Jepsen-style test's network: one network namespace per node and one "hub" namespace holding a bridge,
// the clients and the test driver, joined by veth pairs. Every address is private and exists only inside
// these namespaces (nothing is added to the host's own network). A partition is iptables DROP rules in the
// nodes' namespaces (in a chain of our own, so healing is one flush); the hub always reaches every node, so
// clients keep talking to both sides of a partition, as Jepsen's clients do.
//
// Names carry a per-run prefix with the creating process's pid (`svcj<pid>-…`): a run removes, before it
// starts, what a crashed earlier run left (namespaces whose creator is gone, and the processes in them).
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** NETNS_PREFIX starts every namespace name this test makes. */
export const NETNS_PREFIX = 'svcj';
/** SUBNET_PREFIX is the /24 of the run's addresses (the same in every run: each run's namespaces are its own). */
export const SUBNET_PREFIX = '10.213.0';
/** HUB_HOST_OCTET and NODE_HOST_OCTET_FIRST place the hub and the nodes in the subnet. */
const HUB_HOST_OCTET = 1;
const NODE_HOST_OCTET_FIRST = 11;
/** COMMAND_TIMEOUT_MS bounds one ip or iptables command. */
const COMMAND_TIMEOUT_MS = 15_000;
/** PARTITION_CHAIN is the iptables chain, in each node namespace, that holds a partition's DROP rules. */
const PARTITION_CHAIN = 'svcj-partition';
const NETNS_DIR = '/var/run/netns';

export interface NodeHost {
  name: string;
  netns: string;
  address: string;
}

export interface Topology {
  prefix: string;
  hubNetns: string;
  hubAddress: string;
  nodes: NodeHost[];
}

async function sh(command: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(command, args, { timeout: COMMAND_TIMEOUT_MS });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed: ${(e.stderr ?? '').trim() || e.message}`, { cause: err });
  }
}

/** netnsUnavailable says why this machine cannot run the test (not root, no `ip netns`, no iptables), or null. */
export async function netnsUnavailable(): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'not running as root (network namespaces and iptables need root)';
  for (const [command, args] of [
    ['ip', ['netns', 'list']],
    ['iptables', ['--version']],
  ] as const) {
    try {
      await run(command, [...args], { timeout: COMMAND_TIMEOUT_MS });
    } catch (err) {
      return `\`${command} ${args.join(' ')}\` is unavailable: ${(err as Error).message.split('\n')[0]}`;
    }
  }
  return null;
}

function listNetns(): string[] {
  try {
    return readdirSync(NETNS_DIR);
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** killNetnsProcesses ends, with SIGKILL, every process inside one of our namespaces (nodes we started there). */
async function killNetnsProcesses(netns: string): Promise<void> {
  const pids = (await sh('ip', ['netns', 'pids', netns]).catch(() => ''))
    .split(/\s+/)
    .filter((p) => p !== '')
    .map(Number);
  for (const pid of pids) {
    if (pid === process.pid) continue;
    try {
      process.kill(pid, 'SIGCONT');
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

async function deleteNetns(netns: string): Promise<void> {
  await killNetnsProcesses(netns);
  // Deleting a namespace also deletes its veth ends (and so their peers) and its iptables rules.
  await sh('ip', ['netns', 'delete', netns]).catch(() => undefined);
}

/**
 * removeLeftovers deletes the namespaces of earlier runs whose creating process is gone (a crashed run's), and
 * kills what still runs in them. A live run's namespaces (another test at the same time) are left alone.
 */
export async function removeLeftovers(): Promise<string[]> {
  const removed: string[] = [];
  for (const name of listNetns()) {
    const match = new RegExp(`^${NETNS_PREFIX}(\\d+)-`).exec(name);
    if (!match) continue;
    if (alive(Number(match[1])) && Number(match[1]) !== process.pid) continue;
    await deleteNetns(name);
    removed.push(name);
  }
  return removed;
}

/**
 * createTopology makes the hub namespace (a bridge with the hub's address) and one namespace per node, each
 * with a veth pair to the bridge and the node's address on its end. On any failure it removes what it made.
 */
export async function createTopology(nodeNames: readonly string[], runTag = `${process.pid}`): Promise<Topology> {
  const prefix = `${NETNS_PREFIX}${runTag}`;
  const topology: Topology = {
    prefix,
    hubNetns: `${prefix}-hub`,
    hubAddress: `${SUBNET_PREFIX}.${HUB_HOST_OCTET}`,
    nodes: nodeNames.map((name, i) => ({
      name,
      netns: `${prefix}-${name}`,
      address: `${SUBNET_PREFIX}.${NODE_HOST_OCTET_FIRST + i}`,
    })),
  };
  try {
    const hub = topology.hubNetns;
    await sh('ip', ['netns', 'add', hub]);
    await sh('ip', ['-n', hub, 'link', 'set', 'lo', 'up']);
    await sh('ip', ['-n', hub, 'link', 'add', 'br0', 'type', 'bridge']);
    await sh('ip', ['-n', hub, 'addr', 'add', `${topology.hubAddress}/24`, 'dev', 'br0']);
    await sh('ip', ['-n', hub, 'link', 'set', 'br0', 'up']);
    for (const [i, node] of topology.nodes.entries()) {
      await sh('ip', ['netns', 'add', node.netns]);
      await sh('ip', ['-n', node.netns, 'link', 'set', 'lo', 'up']);
      // Both veth ends are made inside our namespaces: the host's namespace never holds one, even for a moment.
      await sh('ip', ['-n', hub, 'link', 'add', `v${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', node.netns]);
      await sh('ip', ['-n', hub, 'link', 'set', `v${i}`, 'master', 'br0', 'up']);
      await sh('ip', ['-n', node.netns, 'addr', 'add', `${node.address}/24`, 'dev', 'eth0']);
      await sh('ip', ['-n', node.netns, 'link', 'set', 'eth0', 'up']);
      await iptables(node.netns, ['-N', PARTITION_CHAIN]);
      await iptables(node.netns, ['-A', 'INPUT', '-j', PARTITION_CHAIN]);
      await iptables(node.netns, ['-A', 'OUTPUT', '-j', PARTITION_CHAIN]);
    }
  } catch (err) {
    await removeTopology(topology);
    throw err;
  }
  return topology;
}

/** removeTopology kills what runs in the run's namespaces and deletes them (and with them every link and rule). */
export async function removeTopology(topology: Topology): Promise<void> {
  for (const node of topology.nodes) await deleteNetns(node.netns);
  await deleteNetns(topology.hubNetns);
}

function iptables(netns: string, args: string[]): Promise<string> {
  return sh('ip', ['netns', 'exec', netns, 'iptables', '-w', '5', ...args]);
}

/**
 * partition cuts the nodes into groups: a node drops every packet to or from a node of another group. The hub
 * (clients, the driver) still reaches every node. Nodes named in no group keep talking to everyone.
 */
export async function partition(topology: Topology, groups: readonly (readonly string[])[]): Promise<void> {
  const groupOf = new Map<string, number>();
  groups.forEach((group, i) => {
    for (const name of group) groupOf.set(name, i);
  });
  await Promise.all(
    topology.nodes.map(async (node) => {
      await iptables(node.netns, ['-F', PARTITION_CHAIN]);
      const mine = groupOf.get(node.name);
      if (mine === undefined) return;
      for (const other of topology.nodes) {
        const theirs = groupOf.get(other.name);
        if (other === node || theirs === undefined || theirs === mine) continue;
        await iptables(node.netns, ['-A', PARTITION_CHAIN, '-s', other.address, '-j', 'DROP']);
        await iptables(node.netns, ['-A', PARTITION_CHAIN, '-d', other.address, '-j', 'DROP']);
      }
    }),
  );
}

/** heal removes every partition rule. */
export async function heal(topology: Topology): Promise<void> {
  await Promise.all(topology.nodes.map((node) => iptables(node.netns, ['-F', PARTITION_CHAIN])));
}

/** netnsExec is the command prefix that runs a program inside a namespace (exec'ed in place: the pid is the program's). */
export function netnsExec(netns: string): string[] {
  return ['ip', 'netns', 'exec', netns];
}
