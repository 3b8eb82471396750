// The Prompter on a real terminal, with @inquirer/prompts (its own bundle). Each answer is
// checked as it is typed, by the flags' rules, so a refused one is asked again, not sent.
import { Writable } from 'node:stream';
import { checkbox, confirm, input, password, select } from '@inquirer/prompts';
import type { Context } from '../context.js';
import type { Prompter } from './prompter.js';
import { destinationUrlSchema, EVENT_TYPES, nameSchema } from '../api/schemas.js';
import { parseExpectedVersion } from '../input/parse.js';
import { isLoopbackHost } from '../http/wire-checks.js';

const firstIssue = (r: { success: boolean; error?: { issues: { message: string }[] } }) => (r.success ? true : (r.error?.issues[0]?.message ?? 'invalid'));

export function promptedNameIssue(value: string): true | string {
  return firstIssue(nameSchema().safeParse(value));
}

/** The request's rules, and a server's for where it sends deliveries: https (http only on loopback), no user name or password. */
export function promptedUrlIssue(value: string): true | string {
  const shape = firstIssue(destinationUrlSchema().safeParse(value));
  if (shape !== true) return shape;
  const url = new URL(value);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) return 'must use https:// (http:// only for a receiver on this machine: localhost, 127.0.0.1, [::1])';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password';
  return true;
}

function expectedVersionIssue(v: string): true | string {
  try {
    parseExpectedVersion(v.trim());
    return true;
  } catch (err) {
    return (err as Error).message.replace(/^invalid --expected-version "[^"]*": /, '');
  }
}

const ROTATION_MODES = [
  { value: 'overlap', name: 'overlap', description: 'new secret now; the old one keeps working for a grace period, so receivers can switch without failed deliveries' },
  { value: 'immediate', name: 'immediate', description: 'new secret now; the old one stops working at once (for a leaked secret)' },
];

/** The prompts on the run's own streams; without colour (--no-color, NO_COLOR) their SGR sequences are taken out on the way. */
export function createPrompter(ctx: Context, output: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }, color: boolean): Prompter {
  // A prompt ends the stream it writes to: each gets one of its own that never ends the real one.
  const ctxOf = () => ({ signal: ctx.signal, clearPromptOnDone: false, input: ctx.io.raw.stdin, output: passOn(output, color) });
  return {
    name: () => input({ message: 'Endpoint name (1 to 80 characters)', validate: promptedNameIssue }, ctxOf()),
    url: () => input({ message: 'Destination URL (https)', validate: promptedUrlIssue }, ctxOf()),
    events: () => checkbox({ message: 'Event types (space to select, enter to confirm)', choices: EVENT_TYPES.map((value) => ({ value })), required: true, pageSize: EVENT_TYPES.length }, ctxOf()),
    expectedVersion: async () => (await input({ message: "Endpoint's current version", validate: expectedVersionIssue }, ctxOf())).trim(),
    mode: () => select({ message: 'Rotation mode', choices: ROTATION_MODES }, ctxOf()),
    confirmImmediate: (endpointId) =>
      confirm({ message: `Rotate ${endpointId} immediately? The current secret stops working at once and deliveries signed with it will fail verification.`, default: false }, ctxOf()),
    confirmShowToken: (where) => confirm({ message: `Print the token (${where}) on this terminal? It stays in the scrollback.`, default: false }, ctxOf()),
    token: () => password({ message: 'Bearer token', mask: '*', validate: (v) => (v.trim() ? true : 'the token is empty') }, ctxOf()),
  };
}

// eslint-disable-next-line no-control-regex
const SGR = /\u001b\[[0-9;]*m/g;

/** Writes on to a terminal stream, without colour sequences unless `color`; its size and TTY flag are the real one's. */
function passOn(out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number }, color: boolean): NodeJS.WritableStream {
  const plain = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      out.write(color ? chunk : String(chunk).replace(SGR, ''), () => done());
    },
  });
  return Object.defineProperties(plain, { isTTY: { get: () => out.isTTY }, columns: { get: () => out.columns }, rows: { get: () => out.rows } });
}
