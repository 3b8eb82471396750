// "Did you mean …?" for values checked against a fixed list (--mode, --event,
// completion shells). Commands and options get commander's own suggestion,
// which uses the same measure.

/** Optimal string alignment distance (Damerau–Levenshtein without repeated edits of a substring). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** Words whose meanings are each other's opposite: one is never offered for the other. */
const OPPOSITES: readonly (readonly [string, string])[] = [
  ['activate', 'deactivate'],
  ['reactivate', 'deactivate'],
  ['enable', 'disable'],
  ['login', 'logout'],
  ['create', 'delete'],
  ['add', 'remove'],
  ['lock', 'unlock'],
  ['show', 'hide'],
  ['set', 'unset'],
];

/**
 * True when `a` and `b` name opposite actions (`deactivate` and
 * `reactivate`, `login` and `logout`, `x` and `unx`): a typo of one is close
 * to the other in spelling, never in meaning.
 */
export function isOpposite(a: string, b: string): boolean {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  if (x === y) return false;
  const pair = (p: string, q: string) => OPPOSITES.some(([m, n]) => (p === m && q === n) || (p === n && q === m));
  if (pair(x, y)) return true;
  for (const prefix of ['un', 'de', 'dis', 'non']) if (x === prefix + y || y === prefix + x) return true;
  return false;
}

/**
 * The nearest valid word: within 2 edits (case ignored), else the one
 * valid word that contains what was typed (`message.created` →
 * `chat.message.created.v1`). A tie goes to the one word that starts with
 * the same letter (`bsh` → bash, not zsh). Never the opposite of what was
 * typed (`deactivate` does not get `reactivate`). Undefined when nothing is
 * close or it is still a tie.
 */
export function nearest(word: string, given: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  if (w === '' || w.length > 200) return undefined;
  const valid = given.filter((v) => !isOpposite(w, v));
  let best: string | undefined;
  let bestDistance = 3;
  let tied: string[] = [];
  for (const v of valid) {
    const d = editDistance(w, v.toLowerCase());
    if (d < bestDistance) {
      best = v;
      bestDistance = d;
      tied = [v];
    } else if (d === bestDistance) tied.push(v);
  }
  if (tied.length > 1) {
    const sameStart = tied.filter((v) => v[0]?.toLowerCase() === w[0]);
    best = sameStart.length === 1 ? sameStart[0] : undefined;
  }
  if (best !== undefined && bestDistance < w.length) return best;
  if (w.length >= 4) {
    const containing = valid.filter((v) => v.toLowerCase().includes(w));
    if (containing.length === 1) return containing[0];
  }
  return undefined;
}

/** "did you mean X?" or undefined. */
export function didYouMean(word: string, valid: readonly string[]): string | undefined {
  const n = nearest(word, valid);
  return n === undefined ? undefined : `did you mean ${n}?`;
}
