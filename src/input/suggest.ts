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

/**
 * The nearest valid word: within 2 edits (case ignored), else the one
 * valid word that contains what was typed (`message.created` →
 * `chat.message.created.v1`). Undefined when nothing is close or it is a tie.
 */
export function nearest(word: string, valid: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  if (w === '' || w.length > 200) return undefined;
  let best: string | undefined;
  let bestDistance = 3;
  let tie = false;
  for (const v of valid) {
    const d = editDistance(w, v.toLowerCase());
    if (d < bestDistance) {
      best = v;
      bestDistance = d;
      tie = false;
    } else if (d === bestDistance) tie = true;
  }
  if (best !== undefined && !tie && bestDistance < w.length) return best;
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
