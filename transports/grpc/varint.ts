// Protobuf varints written by hand, for the messages this codebase encodes without the generated writer
// (methods.ts's snapshot chunks, store-rpc/propose-wire.ts's Propose answer): what the writer makes of a
// non-negative safe integer, byte for byte, without its arrays.

/** varintBytes: how many bytes a non-negative safe integer takes as a varint. */
export function varintBytes(value: number): number {
  let bytes = 1;
  // Bounded: a safe integer has at most 8 varint groups of 7 bits.
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes++;
  return bytes;
}

/** writeVarint writes a non-negative safe integer as a protobuf varint (division, not bit operators, past 32 bits). */
export function writeVarint(out: Buffer, at: number, value: number): number {
  let rest = value;
  // Bounded as in varintBytes.
  while (rest >= 0x80) {
    out[at++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  out[at++] = rest;
  return at;
}
