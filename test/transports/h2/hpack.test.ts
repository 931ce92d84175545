// HPACK decoding against RFC 7541 Appendix C's examples (dynamic table, Huffman) and its refusals.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HUFFMAN_CODES, huffmanDecode } from '../../../transports/h2/hpack-huffman.js';
import { decodeInteger, encodeHeaderBlock, HpackDecoder, HpackError } from '../../../transports/h2/hpack.js';

const hex = (text: string): Buffer => Buffer.from(text.replace(/\s+/g, ''), 'hex');

describe('h2 HPACK', () => {
  it('derives the RFC canonical Huffman codes from their lengths', () => {
    // Spot checks against RFC 7541 Appendix B.
    assert.equal(HUFFMAN_CODES[0x30], 0x0); // '0'
    assert.equal(HUFFMAN_CODES[0x61], 0x3); // 'a'
    assert.equal(HUFFMAN_CODES[0x20], 0x14); // ' '
    assert.equal(HUFFMAN_CODES[0x7a], 0x7b); // 'z'
    assert.equal(HUFFMAN_CODES[0x00], 0x1ff8);
    assert.equal(HUFFMAN_CODES[0xff], 0x3ffffee);
    assert.equal(HUFFMAN_CODES[256], 0x3fffffff); // EOS
  });

  it('decodes integers across prefix boundaries (RFC 7541 C.1)', () => {
    assert.deepEqual(decodeInteger(Buffer.from([0x0a]), 0, 5), [10, 1]);
    assert.deepEqual(decodeInteger(Buffer.from([0x1f, 0x9a, 0x0a]), 0, 5), [1337, 3]);
    assert.throws(() => decodeInteger(Buffer.from([0x1f, 0x9a]), 0, 5), HpackError);
    assert.throws(() => decodeInteger(Buffer.from([0x1f, 0xff, 0xff, 0xff, 0xff, 0x7f]), 0, 5), HpackError);
  });

  it('decodes requests without Huffman, filling the dynamic table (RFC 7541 C.3)', () => {
    const decoder = new HpackDecoder(4096);
    const first = decoder.decode(hex('8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d'));
    assert.deepEqual(first.fields, [
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
    ]);
    const second = decoder.decode(hex('8286 84be 5808 6e6f 2d63 6163 6865'));
    assert.deepEqual(second.fields.at(-1), ['cache-control', 'no-cache']);
    assert.deepEqual(second.fields[3], [':authority', 'www.example.com']);
    const third = decoder.decode(hex('8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65'));
    assert.deepEqual(third.fields, [
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ]);
  });

  it('decodes requests with Huffman strings (RFC 7541 C.4)', () => {
    const decoder = new HpackDecoder(4096);
    assert.deepEqual(decoder.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff')).fields.at(-1), [
      ':authority',
      'www.example.com',
    ]);
    assert.deepEqual(decoder.decode(hex('8286 84be 5886 a8eb 1064 9cbf')).fields.at(-1), ['cache-control', 'no-cache']);
    const third = decoder.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'));
    assert.deepEqual(third.fields.at(-1), ['custom-key', 'custom-value']);
    assert.equal(third.listBytes, 5 * 32 + 7 + 3 + 7 + 5 + 5 + 11 + 10 + 15 + 10 + 12);
  });

  it('refuses bad Huffman padding, EOS, bad indices and oversized table updates', () => {
    // 'a' is 00011: padded with 000 (not EOS bits).
    assert.throws(() => huffmanDecode(Buffer.from([0b00011000]), 0, 1), /padding/);
    // 'a' then a whole byte of ones: padding longer than 7 bits.
    assert.throws(() => huffmanDecode(Buffer.from([0b00011111, 0xff]), 0, 2), /padding/);
    // EOS itself: 30 ones, then padding.
    assert.throws(() => huffmanDecode(Buffer.from([0xff, 0xff, 0xff, 0xff]), 0, 4), /EOS/);
    assert.equal(huffmanDecode(Buffer.from([0b00011111]), 0, 1), 'a');
    const decoder = new HpackDecoder(4096);
    assert.throws(() => decoder.decode(Buffer.from([0x80])), HpackError); // index 0
    assert.throws(() => decoder.decode(Buffer.from([0xbe])), HpackError); // index 62, the table is empty
    assert.throws(() => decoder.decode(hex('3fe21f')), /above SETTINGS_HEADER_TABLE_SIZE/); // update to 4097
    assert.throws(() => decoder.decode(hex('82 20')), /after the start/);
    assert.throws(() => decoder.decode(hex('40 05 61')), /cut short|longer than/);
  });

  it('evicts the oldest entries past the table size, and a size update empties it', () => {
    const decoder = new HpackDecoder(4096);
    decoder.decode(hex('20')); // size 0: nothing stays
    decoder.decode(hex('4001 6101 62')); // a: b, not kept
    assert.throws(() => decoder.decode(Buffer.from([0xbe])), HpackError);
    decoder.decode(hex('3fe11f')); // back to 4096
    decoder.decode(hex('4001 6101 62'));
    assert.deepEqual(decoder.decode(Buffer.from([0xbe])).fields, [['a', 'b']]);
  });

  it('counts but does not keep fields past the list bound (an HPACK bomb of references)', () => {
    const decoder = new HpackDecoder(4096);
    const entry = Buffer.concat([hex('40 01 62 7f a1 1e'), Buffer.alloc(4000, 0x61)]); // b: 4,000 × 'a', indexed
    const bomb = Buffer.concat([entry, Buffer.alloc(10_000, 0xbe)]); // then 10,000 references to it
    const decoded = decoder.decode(bomb, 16_384);
    assert.equal(decoded.listBytes, 10_001 * (1 + 4000 + 32));
    assert.equal(decoded.fields.length, 4);
  });

  it('encodes what it decodes', () => {
    const fields = [
      [':status', '200'],
      ['content-type', 'application/grpc'],
      ['grpc-message', 'x'.repeat(300)],
    ] as const;
    assert.deepEqual(new HpackDecoder(4096).decode(encodeHeaderBlock(fields)).fields, fields);
  });

  it('decodes the same literals alike block after block (its cache of recent strings answers only equal bytes)', () => {
    // Short strings over a two-letter alphabet: many of the same length and different bytes share a cache slot.
    const text = fc.stringMatching(/^[ab]{0,6}$/);
    fc.assert(
      fc.property(fc.array(fc.array(fc.tuple(text, text), { maxLength: 6 }), { maxLength: 30 }), (blocks) => {
        const decoder = new HpackDecoder(4096);
        for (const block of blocks) {
          const fields = block.map(([name, value]) => [`x-${name}`, value] as const);
          assert.deepEqual(decoder.decode(encodeHeaderBlock(fields)).fields, fields);
        }
      }),
    );
  });

  it('tells a Huffman literal from a raw one of the same bytes', () => {
    // :authority www.example.com, Huffman-coded, without indexing (RFC 7541 C.4.1's bytes), then those bytes raw.
    const coded = hex('01 8c f1e3c2e5f23a6ba0ab90f4ff');
    const raw = hex('01 0c f1e3c2e5f23a6ba0ab90f4ff');
    const decoder = new HpackDecoder(4096);
    for (let i = 0; i < 2; i++) {
      assert.deepEqual(decoder.decode(coded).fields, [[':authority', 'www.example.com']]);
      assert.deepEqual(decoder.decode(raw).fields, [[':authority', raw.subarray(2).toString('latin1')]]);
    }
  });
});
