// HPACK's Huffman code (RFC 7541 Appendix B). The code is canonical (codes of one length are consecutive, in
// symbol order, shorter lengths first), so the table is its 257 code lengths (256 bytes and EOS) and the
// codes are derived from them; test/transports/h2/hpack.test.ts checks the derivation against codes the RFC
// prints and decodes what node:http2 (nghttp2) encodes.

const CODE_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
  28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6,
  5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23,
  22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22,
  23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26,
  20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27,
  27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27,
  27, 27, 27, 26,
  // EOS
  30,
];

const EOS = 256;

/** huffmanCodes are the canonical codes of the 257 symbols, derived from CODE_LENGTHS. */
export const HUFFMAN_CODES: readonly number[] = (() => {
  const order = CODE_LENGTHS.map((length, symbol) => ({ length, symbol })).sort(
    (a, b) => a.length - b.length || a.symbol - b.symbol,
  );
  const codes = new Array<number>(CODE_LENGTHS.length);
  let code = 0;
  let length = order[0]!.length;
  for (const entry of order) {
    code *= 2 ** (entry.length - length);
    length = entry.length;
    codes[entry.symbol] = code;
    code += 1;
  }
  return codes;
})();

/**
 * The decoding tree: node n's children are TREE[2n] (bit 0) and TREE[2n+1] (bit 1); a value ≥ 0 is a child node,
 * -1 - symbol a leaf, and 0 below the root no child (a prefix of no code, which cannot happen in a complete code).
 */
const TREE: Int32Array = (() => {
  const tree = new Int32Array(2 * 2 * CODE_LENGTHS.length);
  let nodes = 1;
  CODE_LENGTHS.forEach((length, symbol) => {
    const code = HUFFMAN_CODES[symbol]!;
    let node = 0;
    for (let bit = length - 1; bit >= 0; bit--) {
      const slot = 2 * node + (Math.floor(code / 2 ** bit) & 1);
      if (bit === 0) tree[slot] = -1 - symbol;
      else {
        if (tree[slot] === 0) tree[slot] = nodes++;
        node = tree[slot]!;
      }
    }
  });
  return tree;
})();

export class HuffmanError extends Error {}

/**
 * huffmanDecode decodes `bytes[start, end)`. It refuses (RFC 7541 5.2) an EOS symbol, padding longer than 7
 * bits, and padding that is not the most significant bits of EOS (all ones).
 */
export function huffmanDecode(bytes: Buffer, start: number, end: number): string {
  // Symbols go to a scratch buffer and become one string at the end: `out += char` built a rope of one
  // allocation per character (a leader decoded ~1 KB of them per request: a sampled heap profile).
  // A Huffman code is at least 5 bits, so a string has at most 8/5 symbols per byte.
  const scratch = huffmanScratch((end - start) * 2);
  let length = 0;
  let node = 0;
  // Bits read since the last symbol, and whether they were all ones: what is left at the end is padding.
  let depth = 0;
  let allOnes = true;
  for (let i = start; i < end; i++) {
    const byte = bytes[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      const one = (byte >> bit) & 1;
      const next = TREE[2 * node + one]!;
      depth += 1;
      allOnes &&= one === 1;
      if (next < 0) {
        const symbol = -1 - next;
        if (symbol === EOS) throw new HuffmanError('EOS inside a Huffman string');
        scratch[length++] = symbol;
        node = 0;
        depth = 0;
        allOnes = true;
      } else node = next;
    }
  }
  if (depth > 7) throw new HuffmanError('Huffman padding longer than 7 bits');
  if (!allOnes) throw new HuffmanError('Huffman padding other than EOS bits');
  return scratch.toString('latin1', 0, length);
}

let scratchBytes = Buffer.allocUnsafe(256);

/** huffmanScratch: a buffer of at least `bytes` bytes, reused across calls (decoding never reenters). */
function huffmanScratch(bytes: number): Buffer {
  if (scratchBytes.length < bytes) scratchBytes = Buffer.allocUnsafe(Math.max(bytes, 2 * scratchBytes.length));
  return scratchBytes;
}
