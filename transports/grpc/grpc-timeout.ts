// grpcTimeoutMs reads a request's grpc-timeout header as grpc-js's server does (its deadline pattern, unanchored,
// and its unit table), with a fast path for the form this system's clients send.

/**
 * grpcTimeoutMs is a grpc-timeout header's timeout in whole ms, or null when the header is unparsable (grpc-js
 * then answers INTERNAL).
 */
export function grpcTimeoutMs(timeout: string): number | null {
  const millis = plainMillis(timeout);
  if (millis !== null) return millis;
  const match = DEADLINE.exec(timeout);
  return match === null ? null : (Number(match[1]) * DEADLINE_UNIT_MS[match[2]!]!) | 0;
}

const DEADLINE = /(\d{1,8})\s*([HMSmun])/;
const DEADLINE_UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const UNIT_MILLIS = 0x6d; // 'm'

/**
 * plainMillis reads the form this system's clients send (1-8 digits then `m`, e.g. `4999m`) without a regex: the
 * timeout in ms, or null for any other form (read by DEADLINE then, with the same result for this one).
 */
function plainMillis(timeout: string): number | null {
  const digits = timeout.length - 1;
  if (digits < 1 || digits > 8 || timeout.charCodeAt(digits) !== UNIT_MILLIS) return null;
  let value = 0;
  for (let i = 0; i < digits; i++) {
    const c = timeout.charCodeAt(i);
    if (c < DIGIT_0 || c > DIGIT_9) return null;
    value = value * 10 + (c - DIGIT_0);
  }
  return value;
}
