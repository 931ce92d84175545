// SecretMasker replaces credential values in a run's output before it becomes an event. Output arrives in
// chunks, so a value may be split across two: the masker holds back the last (longest value − 1) characters
// of each stream until more arrives or the stream ends, which is the least that guarantees a split value is
// seen whole. Masked: each value as given and its base64 and URL-encoded forms (what an agent most often
// prints by accident, e.g. an Authorization header or a URL with a token). Values shorter than
// secretMaskLengthMin are not masked (they would mask ordinary text); injected credentials are rarely that short.
export const secretMaskLengthMin = 4;

/** secretMask replaces a value: no ASCII, so it never contains a value and masking it again changes nothing. */
export const secretMask = '••••••';

export class SecretMasker {
  private readonly needles: string[];
  private readonly holdBack: number;
  private readonly pending = new Map<string, string>();

  constructor(values: readonly string[]) {
    const needles = new Set<string>();
    for (const value of values) {
      if (value.length < secretMaskLengthMin) continue;
      for (const form of [value, Buffer.from(value).toString('base64'), encodeURIComponent(value)]) needles.add(form);
    }
    // Longest first, so a value that contains another is masked whole.
    this.needles = [...needles].sort((a, b) => b.length - a.length);
    this.holdBack = Math.max(0, ...this.needles.map((needle) => needle.length - 1));
  }

  get active(): boolean {
    return this.needles.length > 0;
  }

  /** push returns what of stream's text may be emitted now (masked); the rest waits for more or for end(). */
  push(stream: string, text: string): string {
    if (!this.active) return text;
    const joined = (this.pending.get(stream) ?? '') + text;
    // A value that could still be completed by the next chunk starts within the last holdBack characters; a
    // whole value that straddles the cut moves the cut to its start. What is before the cut is final.
    let cut = Math.max(0, joined.length - this.holdBack);
    for (let moved = true; moved && cut > 0;) {
      moved = false;
      for (const needle of this.needles) {
        const start = joined.lastIndexOf(needle, cut - 1);
        if (start >= 0 && start + needle.length > cut) {
          cut = start;
          moved = true;
        }
      }
    }
    this.pending.set(stream, joined.slice(cut));
    return this.mask(joined.slice(0, cut));
  }

  /** end returns the held-back rest of stream, masked. */
  end(stream: string): string {
    const rest = this.pending.get(stream) ?? '';
    this.pending.delete(stream);
    return this.mask(rest);
  }

  mask(text: string): string {
    let result = text;
    for (const needle of this.needles) result = result.split(needle).join(secretMask);
    return result;
  }
}
