// Engine checkpoints: the whole in-memory state of an engine as a tree of JSON values (and byte strings),
// and an engine rebuilt from one that takes the same decisions for every following input. The flight
// recorder writes one when it starts a new segment, so a segment replays without the run's start
// (recording/format.ts, CheckpointLine).
//
// The walk is generic on purpose: it visits every own field of every object under the engine, so a field
// added to any part of the engine tomorrow is in the checkpoint without anyone remembering to add it (a
// hand-written export per class would silently miss it; test/engine/checkpoint.test.ts proves the round
// trip on simulated runs). What it knows of the engine's shape is small:
//   - class instances are written with their class's name and rebuilt from CHECKPOINT_CLASSES; an
//     instance the fresh engine already holds at the same place is filled in place, so closures the
//     constructors made over it stay right;
//   - an object whose fields are all functions (a role's handler set, a host's callbacks) is code, not
//     state: the fresh engine's own is kept, and the core re-derives what depends on the state (its role's
//     handlers) after the import;
//   - an object reached twice is written once and referred to ({$ref}), so shared state stays shared.
// Strings, booleans and finite numbers stay as they are; the rest is tagged ({$num}, {$undef}, {$map},
// {$set}, {$class}); byte strings stay Uint8Array for the recording's codec (which hashes the store's values).
import { assert } from './assert.js';

/** CheckpointClasses maps a class name to its prototype, for the classes an engine state may hold. */
export type CheckpointClasses = Record<string, object>;

type Node = unknown;
type Fields = Record<string, Node>;

/**
 * exportTree writes `root` (and everything under it) as a checkpoint tree; `keep` names fields of the root
 * that are not state (the engine's configuration, given again to the import): written as code, kept as built.
 */
export function exportTree(root: object, classes: CheckpointClasses, keep: readonly string[] = []): Node {
  const seen = new Map<object, number>();
  const names = new Map<object, string>();
  for (const [name, proto] of Object.entries(classes)) names.set(proto, name);
  const visit = (value: unknown, field = ''): Node => {
    if (value !== root && keep.includes(field)) return { $code: 1 };
    if (typeof value === 'number')
      return Number.isFinite(value) && !Object.is(value, -0) ? value : { $num: String(value) };
    if (typeof value === 'string' || typeof value === 'boolean' || value === null) return value;
    if (value === undefined) return { $undef: 1 };
    if (typeof value === 'function') return { $code: 1 };
    assert(typeof value === 'object', `checkpoint: a ${typeof value} cannot be written`);
    if (value instanceof Uint8Array) return value;
    const fields = Array.isArray(value) ? [] : Object.entries(value);
    // Code is not numbered ($ref): the import keeps the fresh engine's and numbers nothing for it either.
    if (fields.length > 0 && fields.every(([, v]) => typeof v === 'function')) return { $code: 1 };
    const ref = seen.get(value);
    if (ref !== undefined) return { $ref: ref };
    seen.set(value, seen.size);
    if (Array.isArray(value)) return value.map((v) => visit(v));
    if (value instanceof Map) return { $map: [...value].map(([k, v]) => [visit(k), visit(v)]) };
    if (value instanceof Set) return { $set: [...value].map((v) => visit(v)) };
    const proto = Object.getPrototypeOf(value) as object | null;
    const plain = proto === Object.prototype || proto === null;
    const out: Fields = {};
    for (const [k, v] of fields) {
      // A plain object is rebuilt new, with no fresh twin to take a function from: it must hold data only.
      assert(!plain || typeof v !== 'function', `checkpoint: plain object field ${k} is a function`);
      assert(!plain || !k.startsWith('$'), `checkpoint: field ${k} looks like a tag`);
      out[k] = value === root ? visit(v, k) : visit(v);
    }
    if (plain) return out;
    const name = names.get(proto);
    assert(name !== undefined, `checkpoint: class ${proto.constructor.name} is not in CHECKPOINT_CLASSES`);
    return { $class: name, f: out };
  };
  return visit(root);
}

/** importTree fills `root` (a freshly built instance of the exported root's class) from a checkpoint tree. */
export function importTree(root: object, tree: Node, classes: CheckpointClasses): void {
  const made: unknown[] = [];
  const revive = (node: Node, fresh: unknown): unknown => {
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return node;
    if (Array.isArray(node)) {
      const out: unknown[] = [];
      made.push(out);
      for (const item of node) out.push(revive(item, undefined));
      return out;
    }
    const tagged = node as Fields;
    if ('$num' in tagged) return Number(tagged.$num === '-0' ? -0 : tagged.$num);
    if ('$undef' in tagged) return undefined;
    if ('$code' in tagged) return fresh;
    if ('$ref' in tagged) return reference(made, tagged.$ref);
    if ('$map' in tagged) return reviveMap(tagged.$map, made, revive);
    if ('$set' in tagged) return reviveSet(tagged.$set, made, revive);
    if ('$class' in tagged) return reviveInstance(tagged, fresh, classes, made, revive);
    const out: Fields = {};
    made.push(out);
    for (const [k, v] of Object.entries(tagged)) out[k] = revive(v, undefined);
    return out;
  };
  const top = tree as Fields;
  assert(typeof top === 'object' && top !== null && '$class' in top, 'checkpoint: the tree is not a class instance');
  reviveInstance(top, root, classes, made, revive);
}

type Revive = (node: Node, fresh: unknown) => unknown;

function reference(made: unknown[], id: unknown): unknown {
  assert(
    typeof id === 'number' && id >= 0 && id < made.length,
    `checkpoint: $ref ${String(id)} names nothing before it`,
  );
  return made[id];
}

function reviveMap(entries: unknown, made: unknown[], revive: Revive): Map<unknown, unknown> {
  assert(Array.isArray(entries), 'checkpoint: $map is not a list');
  const out = new Map<unknown, unknown>();
  made.push(out);
  for (const pair of entries as unknown[]) {
    assert(Array.isArray(pair) && pair.length === 2, 'checkpoint: a $map entry is not a pair');
    out.set(revive(pair[0], undefined), revive(pair[1], undefined));
  }
  return out;
}

function reviveSet(items: unknown, made: unknown[], revive: Revive): Set<unknown> {
  assert(Array.isArray(items), 'checkpoint: $set is not a list');
  const out = new Set<unknown>();
  made.push(out);
  for (const item of items as unknown[]) out.add(revive(item, undefined));
  return out;
}

function reviveInstance(
  tagged: Fields,
  fresh: unknown,
  classes: CheckpointClasses,
  made: unknown[],
  revive: Revive,
): object {
  const name = tagged.$class;
  assert(typeof name === 'string' && Object.hasOwn(classes, name), `checkpoint: unknown class ${String(name)}`);
  const proto = classes[name]!;
  const fields = tagged.f;
  assert(typeof fields === 'object' && fields !== null, `checkpoint: ${name} has no fields`);
  const reuse = typeof fresh === 'object' && fresh !== null && Object.getPrototypeOf(fresh) === proto;
  const out = (reuse ? fresh : Object.create(proto)) as Fields;
  assert(!Object.isFrozen(out), `checkpoint: ${name} is frozen`);
  made.push(out);
  for (const [k, v] of Object.entries(fields as Fields)) out[k] = revive(v, reuse ? out[k] : undefined);
  return out;
}
