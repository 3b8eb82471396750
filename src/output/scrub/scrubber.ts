// The run's scrubber: the last line of defence. It knows the token, the
// anti-forgery value and every signing secret seen in this run, and blanks
// them in every byte chatctl writes to stderr, in debug traces and in what a
// `--from` run prints and keeps, so even a server message that echoes one
// cannot leak it. Stdout is scrubbed of the credentials but not of the
// secret, which belongs there in the cases docs/secrets.md lists.
//
// "Scrub" is this module's one verb: find a known value, by what it is, in
// text, and blank it (known.ts), in any form it may be shown in: escaped,
// encoded, split by line breaks or spaces (canonical.ts). Blanking fields by
// their name (headers, JSON keys) is redact.ts's.

import { canonicalize, type Canonical } from './canonical.js';
import { blankFound, KnownValues, scrubText } from './known.js';

export { REDACTED } from './known.js';

/** What stands for a line of an exec: command's output that held a short secret. */
export const SCRUBBED_LINE = '[REDACTED: a line of output that held the secret]';

export interface ScrubStream {
  /** The part of what has arrived so far that can go out, scrubbed. */
  push(chunk: string): string;
  /** The rest, scrubbed. */
  end(): string;
}

export class Scrubber {
  private readonly credentials = new KnownValues();
  private readonly secrets = new KnownValues();
  /** Signing secrets too short to look for in free text: kept out of stream() output only, by whole lines. */
  private readonly shortSecrets = new Set<string>();
  private readonly announced = new Set<string>();

  /**
   * `announce` is told of each signing secret and the token the first time
   * either is known, before any other output can show it (createIO writes
   * GitHub Actions' `::add-mask::` lines with it).
   */
  constructor(private readonly announce?: (value: string) => void) {}

  /** Announced only: a value this run prints on purpose (the sandbox's token, `auth token`), so not scrubbed. */
  announceValue(value: string): void {
    if (!this.announce || this.announced.has(value)) return;
    this.announced.add(value);
    this.announce(value);
  }

  /** A credential (the anti-forgery value): scrubbed from stdout too. */
  addCredential(value: string | undefined): void {
    if (value) this.credentials.add(value);
  }

  /** The bearer token in effect: a credential, and announced as a secret is. */
  addToken(value: string | undefined): void {
    if (!value) return;
    this.announceValue(value);
    this.addCredential(value);
  }

  /** A signing secret: scrubbed from everything but stdout. */
  addSecret(value: string | null | undefined): void {
    if (!value) return;
    this.announceValue(value);
    if (!this.secrets.add(value)) this.shortSecrets.add(value);
  }

  /**
   * A secret whose item of a `--from` run is finished: still scrubbed
   * everywhere (a later item's exec: command may print an earlier item's
   * secret, a store it reads back), at a cost that does not grow with the
   * number of items.
   */
  retireSecret(value: string): void {
    this.shortSecrets.delete(value);
    this.secrets.retire(value);
  }

  /** For stderr, debug traces, logs and what a `--from` run keeps: credentials and secrets. */
  scrub(text: string): string {
    return scrubText(text, [this.credentials, this.secrets]);
  }

  /** For stdout: credentials only. */
  scrubCredentials(text: string): string {
    return scrubText(text, [this.credentials]);
  }

  /**
   * Whether stdout's scrubbing would alter this value: a signing secret
   * that holds the token or the anti-forgery value cannot reach stdout whole.
   */
  holdsCredential(value: string): boolean {
    return this.scrubCredentials(value) !== value;
  }

  /**
   * For text that arrives in pieces (a destination command's output):
   * scrubs everything, and holds back the tail that could still be the start
   * of a value, until more comes or end() is called.
   *
   * A signing secret too short to look for cannot be scrubbed character by
   * character without mangling the text (a secret "e" would take every e
   * with it), yet must not reach stderr. So while one is known, the output
   * goes out in whole lines, and a line that holds it as it is is replaced
   * by SCRUBBED_LINE; every other line is shown unchanged. (A short secret
   * with a line break in it is looked for in the whole output, held until
   * the end.)
   */
  stream(): ScrubStream {
    let held = '';
    return {
      push: (chunk) => {
        const text = held + chunk;
        const c = canonicalize(text);
        held = blankFound(text, c, [this.credentials, this.secrets]);
        let cut = this.safeCut(held, held === text ? c : canonicalize(held));
        if (cut === 0) return '';
        if (this.shortSecrets.size > 0) cut = this.shortBreaks() ? 0 : held.lastIndexOf('\n', cut - 1) + 1; // whole lines only
        const out = held.slice(0, cut);
        held = held.slice(cut);
        return this.scrubShort(out);
      },
      end: () => {
        const out = this.scrub(held);
        held = '';
        return this.scrubShort(out);
      },
    };
  }

  /**
   * Where held (already scrubbed) text may be cut: before the last
   * characters that could begin a value still to be completed, and before
   * an escape, an encoding or a colour code cut off at its end.
   */
  private safeCut(held: string, c: Canonical): number {
    const longest = Math.max(this.credentials.longest, this.secrets.longest);
    if (longest === 0) return held.length;
    // Characters read from an escape cut off at the end are not final: only those before it count.
    // (What sequences and tags held, after c.inOrder, lies before the end in order.)
    let final = c.inOrder;
    while (final > 0 && c.spanStart(final - 1) >= c.open) final--;
    const first = final - (longest - 1);
    const beforeValue = first < 0 ? (final > 0 ? c.spanStart(0) : held.length) : c.spanStart(first);
    return Math.min(beforeValue, c.open);
  }

  private shortBreaks(): boolean {
    for (const v of this.shortSecrets) if (/[\r\n]/.test(v)) return true;
    return false;
  }

  /** Each line that holds a short secret replaced by SCRUBBED_LINE (its line ending kept). */
  private scrubShort(text: string): string {
    if (this.shortSecrets.size === 0 || text === '') return text;
    const short = [...this.shortSecrets];
    if (short.some((v) => /[\r\n]/.test(v) && text.includes(v))) return SCRUBBED_LINE + '\n';
    return text.replace(/[^\n]*(\n|$)/g, (line, end: string) => {
      const body = line.slice(0, line.length - end.length);
      return short.some((v) => body.includes(v)) ? SCRUBBED_LINE + end : line;
    });
  }
}
