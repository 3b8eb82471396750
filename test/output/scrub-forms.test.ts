// docs/secrets.md (What is redacted): a server that echoes the token or a
// signing secret split by invisible characters (U+2028, NBSP, ZWJ, ZWSP, a
// soft hyphen, a backspace), interleaved with terminal escape sequences or
// tags, in fullwidth letters, inside a window title, a link or a tag, or
// written as HTML character references, gets none of them shown: not in human output, not in --debug traces, not in a --from
// run's journal (the answer's meta.requestId).
//
// Whether a text "shows" a value is judged by reveal() below, a reader that
// undoes each form with plain regular expressions: written apart from the
// scrubber's canonical form, so it does not share its mistakes.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { CSRF, SECRET, TOKEN, errorBody, scopeEnv, secretBody } from '../support/fixtures.js';
import { runCli, workspace, type Workspace } from '../support/run.js';
import { useRecordingServer } from '../support/server.js';
import { virtualClock } from '../support/fakes.js';

const server = useRecordingServer();

// ---- a reader that undoes every form

const NAMED: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  nbsp: '\u00a0',
  shy: '\u00ad',
  zwj: '\u200d',
  zwnj: '\u200c',
  ZeroWidthSpace: '\u200b',
  lowbar: '_',
  sol: '/',
  plus: '+',
  equals: '=',
};

/**
 * Text as a reader could make it out: escapes and references decoded,
 * escape sequences, tags and invisible characters removed, NFKC; or, with
 * `held`, what a window title, a link or a tag holds kept in its place.
 */
function reveal(text: string, held = false): string {
  let t = text;
  for (let pass = 0; pass < 4; pass++) {
    t = t
      .replace(/\\+u([0-9a-fA-F]{4})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\+x([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\+e/g, '\u001b')
      .replace(/\\+[nrtbf]/g, ' ')
      .replace(/&#[xX]([0-9a-fA-F]+);?/g, (_, h: string) => String.fromCodePoint(parseInt(h, 16)))
      .replace(/&#(\d+);?/g, (_, d: string) => String.fromCodePoint(Number(d)))
      .replace(/&([A-Za-z]+);/g, (all, name: string) => NAMED[name] ?? all);
  }
  return t
    .replace(/(\u001b\[|\u009b)[0-?]*[ -/]*[@-~]/g, '')
    .replace(/(?:\u001b\]|\u009d)([^\u0007\u001b\u009c]*)(?:\u0007|\u001b\\|\u009c)/g, (_, inside: string) => (held ? ` ${inside} ` : ''))
    .replace(/<([^<>]*)>/g, (_, inside: string) => (held ? ` ${inside} ` : ''))
    .replace(/[\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}]/gu, '')
    .normalize('NFKC');
}

/** Whether a reader makes out any stretch of 10 characters of the value. */
const shows = (text: string, value: string) => {
  for (const seen of [reveal(text), reveal(text, true)]) for (let at = 0; at + 10 <= value.length; at++) if (seen.includes(value.slice(at, at + 10))) return true;
  return false;
};

// ---- the forms a server may echo a value in

const fullwidth = (s: string) => [...s].map((c) => (/[!-~]/.test(c) ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c)).join('');
const decimal = (s: string) => [...s].map((c) => `&#${c.codePointAt(0)};`).join('');
const hex = (s: string) => [...s].map((c, i) => `&#${i % 2 ? 'X' : 'x'}${c.codePointAt(0)!.toString(16)};`).join('');
/** Between every two characters. */
const interleave = (s: string, junk: string) => [...s].join(junk);

/** Each form of `value` as a server may write it, as a JS string (JSON-escaped when it goes into a JSON body). */
const FORMS: [string, (v: string) => string][] = [
  ['split by U+2028', (v) => interleave(v, '\u2028')],
  ['split by U+2029 and U+0085', (v) => interleave(v, '\u2029\u0085')],
  ['split by NBSP', (v) => interleave(v, '\u00a0')],
  ['split by ZWJ', (v) => interleave(v, '\u200d')],
  ['split by ZWSP', (v) => interleave(v, '\u200b')],
  ['split by soft hyphens', (v) => interleave(v, '\u00ad')],
  ['split by backspaces', (v) => interleave(v, '\b')],
  ['interleaved with ESC[K', (v) => interleave(v, '\u001b[K')],
  ['interleaved with an OSC title (BEL) and a C1 CSI', (v) => interleave(v, '\u001b]0;x\u0007\u009b2K')],
  ['in fullwidth letters', (v) => fullwidth(v)],
  ['as decimal character references', (v) => decimal(v)],
  ['as hex character references', (v) => hex(v)],
  ['as references escaped again (&amp;#x61;)', (v) => hex(v).replaceAll('&', '&amp;')],
  ['with named references (&lowbar; &nbsp; &shy; &ZeroWidthSpace;)', (v) => interleave(v, '&nbsp;&shy;&ZeroWidthSpace;').replaceAll('_', '&lowbar;')],
  ['split by <wbr> and empty tags', (v) => interleave(v, '<wbr><b></b>')],
  ['inside a window title and a link', (v) => `\u001b]0;${v}\u0007 \u001b]8;;https://x.example/${v}\u001b\\here\u001b]8;;\u001b\\`],
  ['inside a tag', (v) => `<a title="${v}">here</a>`],
];

describe('the forms reveal() undoes (the check itself)', () => {
  test.each(FORMS)('%s: the value is made out', (_name, form) => {
    expect(shows(`x ${form(TOKEN)} y`, TOKEN)).toBe(true);
    expect(shows(JSON.stringify(`x ${form(SECRET)} y`), SECRET)).toBe(true);
    expect(shows('x [REDACTED] y', TOKEN)).toBe(false);
  });
});

// ---- the token: human output and --debug

const REACTIVATE = ['webhooks', 'reactivate', 'we_1', '--expected-version', '3'];

describe('the token echoed in an error, in each form', () => {
  test.each(FORMS)('%s: not in human output nor in --debug', async (_name, form) => {
    const echo = () => ({ status: 401, body: errorBody('authentication_failed', `token ${form(TOKEN)} is not valid`, { token: form(TOKEN), csrf: form(CSRF) }) });
    server.enqueue(echo());
    const human = await runCli(REACTIVATE, { env: scopeEnv(server.url, { CHATCTL_CSRF_TOKEN: CSRF }) });
    expect(human.exitCode).toBe(4);
    expect(human.stderr).toContain('[REDACTED]');
    expect(shows(human.stdout + human.stderr, TOKEN), human.stderr).toBe(false);
    expect(shows(human.stdout + human.stderr, CSRF), human.stderr).toBe(false);

    server.enqueue(echo());
    const debug = await runCli([...REACTIVATE, '--debug'], { env: scopeEnv(server.url, { CHATCTL_CSRF_TOKEN: CSRF }) });
    expect(debug.exitCode).toBe(4);
    expect(debug.stderr).toMatch(/^\[debug\] < 401/m);
    expect(shows(debug.stdout + debug.stderr, TOKEN), debug.stderr).toBe(false);
    expect(shows(debug.stdout + debug.stderr, CSRF), debug.stderr).toBe(false);
  });
});

// ---- a signing secret: a later item's refusal echoes it (human, --debug), and the journal

function manifest(ws: Workspace, ids: string[]): string[] {
  writeFileSync(join(ws.cwd, 'm.ndjson'), ids.map((endpointId) => JSON.stringify({ endpointId, expectedVersion: 1 })).join('\n') + '\n');
  return ['webhooks', 'rotate', '--from', 'm.ndjson', '--mode', 'overlap', '--concurrency', '1', '--secret-to', 'file:{id}.whsec', '--journal', 'j'];
}

describe('a signing secret echoed in each form', () => {
  /**
   * Item 1's answer carries SECRET and echoes it, and the token, as its
   * request id; item 2's refusal echoes SECRET in its message and details.
   */
  const script = (form: (v: string) => string) => (_req: unknown, index: number) => {
    if (index === 0) {
      const body = secretBody(SECRET, true, 'we_1');
      return { status: 200, body: { ...body, meta: { requestId: `req ${form(SECRET)} by ${form(TOKEN)}` } } };
    }
    return { status: 409, body: errorBody('conflict', `endpoint busy; last secret was ${form(SECRET)}`, { echo: form(SECRET) }) };
  };

  test.each(FORMS)('%s: not in human output, --debug, the --json lines nor the journal', async (_name, form) => {
    const ws = workspace();
    server.setHandler(script(form));
    const human = await runCli(manifest(ws, ['we_1', 'we_2']), { ws, env: scopeEnv(server.url), inject: virtualClock() });
    expect(human.exitCode, human.stderr).toBe(14);
    expect(human.stdout).toContain('Failed:');
    expect(readFileSync(join(ws.cwd, 'we_1.whsec'), 'utf8')).toBe(SECRET);
    const journal = readFileSync(join(ws.cwd, 'j'), 'utf8');
    expect(journal).toContain('"t":"ok"');
    for (const text of [human.stdout + human.stderr, journal]) {
      expect(shows(text, SECRET), text).toBe(false);
      expect(shows(text, TOKEN), text).toBe(false);
    }

    server.reset();
    server.setHandler(script(form));
    const ws2 = workspace();
    const debug = await runCli([...manifest(ws2, ['we_1', 'we_2']), '--json', '--debug'], { ws: ws2, env: scopeEnv(server.url), inject: virtualClock() });
    expect(debug.exitCode, debug.stderr).toBe(14);
    expect(debug.stderr).toContain('[debug] we_2: < 409');
    const journal2 = readFileSync(join(ws2.cwd, 'j'), 'utf8');
    for (const text of [debug.stdout, debug.stderr, journal2]) {
      expect(shows(text, SECRET), text).toBe(false);
      expect(shows(text, TOKEN), text).toBe(false);
    }
  });
});
