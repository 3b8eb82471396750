// Finding known values in text and blanking them: each value is kept in
// canonical form (canonical.ts), the text is put in canonical form once, the
// values are found there, and the original span of each match is replaced by
// REDACTED. One matcher for every way a value may be shown, not a list of
// variants.

import { canonicalize, type Canonical } from './canonical.js';

export const REDACTED = '[REDACTED]';

/**
 * Values whose canonical form is shorter than this are not looked for in
 * free text, where "1" would mangle it (the run's scrubber keeps a short
 * secret out of a command's output by whole lines instead).
 */
export const MIN_SCRUB_LENGTH = 6;

/** The canonical form of a value: the same reading as the text's, so the two agree (in order: a value is looked for as it reads). */
export const canonicalValue = (value: string): string => {
  const c = canonicalize(value);
  return c.text.slice(0, c.inOrder);
};

/**
 * A set of values to find. Values in use are found with indexOf (a run has a
 * few). Retired ones (the secrets of a `--from` run's finished items, which
 * can be thousands) are found through their first MIN_SCRUB_LENGTH
 * characters and their lengths, so finding them costs the same however many
 * there are (secrets often share their first characters: whsec_…).
 */
export class KnownValues {
  private readonly active = new Map<string, string>();
  private readonly retired = new Map<number, Set<string>>();
  private readonly retiredHeads = new Set<string>();
  /** The first characters of retired forms, as a table by code: most positions of a text are passed over on one look. */
  private retiredFirst: Uint8Array | undefined;
  /** The length of the longest canonical form held, retired ones included. */
  longest = 0;
  /** The length of the shortest canonical form held. */
  shortest = Number.MAX_SAFE_INTEGER;

  get size(): number {
    return this.active.size + this.retired.size;
  }

  /** Adds a value; false (and nothing added) when its canonical form is too short to look for. */
  add(value: string): boolean {
    if (this.active.has(value)) return true;
    const form = canonicalValue(value);
    if (form.length < MIN_SCRUB_LENGTH) return false;
    this.active.set(value, form);
    this.measure(form);
    return true;
  }

  /** Moves a value to the retired ones: still found, at a cost that does not grow with their number. */
  retire(value: string): void {
    const form = this.active.get(value) ?? canonicalValue(value);
    this.active.delete(value);
    if (form.length < MIN_SCRUB_LENGTH) return;
    this.retiredHeads.add(form.slice(0, MIN_SCRUB_LENGTH));
    (this.retiredFirst ??= new Uint8Array(0x10000))[form.charCodeAt(0)] = 1;
    const same = this.retired.get(form.length);
    if (same) same.add(form);
    else this.retired.set(form.length, new Set([form]));
    this.measure(form);
  }

  private measure(form: string): void {
    this.longest = Math.max(this.longest, form.length);
    this.shortest = Math.min(this.shortest, form.length);
  }

  /** Adds each match in canonical text to `found`, as [from, to) of canonical indexes. */
  find(text: string, found: [number, number][]): void {
    for (const form of this.active.values()) {
      for (let i = text.indexOf(form); i !== -1; i = text.indexOf(form, i + 1)) found.push([i, i + form.length]);
    }
    if (this.retired.size > 0) this.findRetired(text, found);
  }

  private findRetired(text: string, found: [number, number][]): void {
    const first = this.retiredFirst!;
    for (let i = 0; i + MIN_SCRUB_LENGTH <= text.length; i++) {
      if (first[text.charCodeAt(i)] === 0 || !this.retiredHeads.has(text.slice(i, i + MIN_SCRUB_LENGTH))) continue;
      for (const [length, forms] of this.retired) if (forms.has(text.slice(i, i + length))) found.push([i, i + length]);
    }
  }
}

/** Text with every value of `sets` blanked wherever it is found, in any form (canonical.ts). */
export function scrubText(text: string, sets: readonly KnownValues[]): string {
  let shortest = Number.MAX_SAFE_INTEGER;
  for (const s of sets) if (s.size > 0) shortest = Math.min(shortest, s.shortest);
  // The canonical form of ASCII text is never longer than it (a compatibility
  // form beyond ASCII may be: `ﬃ` reads as `ffi`).
  if (text.length < shortest && !/[^\x00-\x7f]/.test(text)) return text;
  return blankFound(text, canonicalize(text), sets);
}

/** Text with the matches of `sets` in its canonical form `c` blanked. */
export function blankFound(text: string, c: Canonical, sets: readonly KnownValues[]): string {
  const found: [number, number][] = [];
  for (const s of sets) if (s.size > 0) s.find(c.text, found);
  if (found.length === 0) return text;
  // As spans of the original: a match in what a sequence or a tag held
  // (after c.inOrder) lies inside one in order, or between two.
  const spans = found.map(([from, to]): [number, number] => [c.spanStart(from), c.spanEnd(to - 1)]).sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let from = 0;
  for (let k = 0; k < spans.length; ) {
    const first = spans[k]![0];
    let last = spans[k]![1];
    // Overlapping matches are blanked as one.
    for (k++; k < spans.length && spans[k]![0] < last; k++) last = Math.max(last, spans[k]![1]);
    out += text.slice(from, first) + REDACTED;
    from = last;
  }
  return out + text.slice(from);
}
