/** maskRevealLengthMin is the shortest value that shows its first and last two characters when masked. */
export const maskRevealLengthMin = 12;
const dots = '••••••';

/**
 * maskSecret shows `ab••••••yz` for values of maskRevealLengthMin characters or more and `••••` for shorter
 * ones, so a short secret never leaves a guessable fraction of itself. It counts code points, not UTF-16 units.
 */
export function maskSecret(value: string): string {
  const codePoints = [...value];
  if (codePoints.length < maskRevealLengthMin) return '••••';
  return `${codePoints.slice(0, 2).join('')}${dots}${codePoints.slice(-2).join('')}`;
}
