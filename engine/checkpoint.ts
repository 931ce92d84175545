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
import { assert, EngineInvariantError } from './assert.js';

/** CheckpointClasses maps a class name to its prototype, for the classes an engine state may hold. */
export type CheckpointClasses = Record<string, object>;

type Node = unknown;
type Fields = Record<string, Node>;

/**
 * exportTree writes `root` (and everything under it) as a checkpoint tree; `keep` names fields of the root
 * that are not state (the engine's configuration, given again to the import): written as code, kept as built.
 */
export function exportTree(root: object, classes: CheckpointClasses, keep: readonly string[] = []): Node {
  const names = new Map<object, string>();
  for (const [name, proto] of Object.entries(classes)) names.set(proto, name);
  return new Exporter(names, root, keep).visit(root);
}

/** Exporter is one export's walk (a log of thousands of entries goes through visit once each: kept lean). */
class Exporter {
  private readonly seen = new Map<object, number>();

  constructor(
    private readonly names: Map<object, string>,
    private readonly root: object,
    private readonly keep: readonly string[],
  ) {}

  visit(value: unknown): Node {
    switch (typeof value) {
      case 'number':
        return Number.isFinite(value) && !Object.is(value, -0) ? value : { $num: String(value) };
      case 'string':
      case 'boolean':
        return value;
      case 'undefined':
        return { $undef: 1 };
      case 'function':
        return { $code: 1 };
      case 'object':
        if (value === null || value instanceof Uint8Array) return value;
        return this.object(value);
      default:
        throw new EngineInvariantError(`checkpoint: a ${typeof value} cannot be written`);
    }
  }

  private object(value: object): Node {
    // Code is not numbered ($ref): the import keeps the fresh engine's and numbers nothing for it either.
    if (!Array.isArray(value) && isCode(value)) return { $code: 1 };
    const ref = this.seen.get(value);
    if (ref !== undefined) return { $ref: ref };
    this.seen.set(value, this.seen.size);
    if (Array.isArray(value)) {
      const out: Node[] = new Array<Node>(value.length);
      for (let i = 0; i < value.length; i++) out[i] = this.visit(value[i]);
      return out;
    }
    if (value instanceof Map) return { $map: [...value].map(([k, v]) => [this.visit(k), this.visit(v)]) };
    if (value instanceof Set) return { $set: [...value].map((v) => this.visit(v)) };
    const proto = Object.getPrototypeOf(value) as object | null;
    if (proto === Object.prototype || proto === null) return this.plain(value as Fields);
    const name = this.names.get(proto);
    if (name === undefined)
      throw new EngineInvariantError(`checkpoint: class ${proto.constructor.name} is not in CHECKPOINT_CLASSES`);
    const out: Fields = {};
    for (const k of Object.keys(value)) {
      const v = (value as Fields)[k];
      out[k] = value === this.root && this.keep.includes(k) ? { $code: 1 } : this.visit(v);
    }
    return { $class: name, f: out };
  }

  /** plain: a plain object is rebuilt new, with no fresh twin to take a function from: data only, no tag-like keys. */
  private plain(value: Fields): Node {
    const out: Fields = {};
    for (const k of Object.keys(value)) {
      const v = value[k];
      if (typeof v === 'function' || k.charCodeAt(0) === 36 /* $ */)
        throw new EngineInvariantError(`checkpoint: plain object field ${k} is a function or looks like a tag`);
      out[k] = this.visit(v);
    }
    return out;
  }
}

/** isCode: an object whose fields are all functions (a handler set, a host's callbacks) is code, not state. */
function isCode(value: object): boolean {
  let count = 0;
  for (const k of Object.keys(value)) {
    if (typeof (value as Fields)[k] !== 'function') return false;
    count++;
  }
  return count > 0;
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
    () => `checkpoint: $ref ${String(id)} names nothing before it`,
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
  assert(typeof name === 'string' && Object.hasOwn(classes, name), () => `checkpoint: unknown class ${String(name)}`);
  const proto = classes[name]!;
  const fields = tagged.f;
  assert(typeof fields === 'object' && fields !== null, () => `checkpoint: ${name} has no fields`);
  const reuse = typeof fresh === 'object' && fresh !== null && Object.getPrototypeOf(fresh) === proto;
  const out = (reuse ? fresh : Object.create(proto)) as Fields;
  assert(!Object.isFrozen(out), () => `checkpoint: ${name} is frozen`);
  made.push(out);
  for (const [k, v] of Object.entries(fields as Fields)) out[k] = revive(v, reuse ? out[k] : undefined);
  return out;
}
