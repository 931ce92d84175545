// InvariantViolation is how a checker (or the driver contract) stops a run: it
// is thrown, never caught inside the world, and carries the invariant's name.
export class InvariantViolation extends Error {
  constructor(
    readonly invariant: string,
    message: string,
    readonly nodeIndex: number = -1,
  ) {
    super(`${invariant}: ${message}`);
    this.name = 'InvariantViolation';
  }
}

export function violate(invariant: string, message: string, nodeIndex = -1): never {
  throw new InvariantViolation(invariant, message, nodeIndex);
}
