// The Prompter on a real terminal, with @inquirer/prompts. Each answer is
// checked as it is typed, against the same rules as the flags.
import { Writable } from 'node:stream';
import { checkbox, confirm, input, password, select } from '@inquirer/prompts';
import type { Context } from '../context.js';
import type { Prompter } from './prompter.js';
import { EVENT_TYPES } from '../api/schemas.js';
import { parseExpectedVersion } from '../input/parse.js';
import { promptedNameIssue, promptedUrlIssue } from './validate.js';

/**
 * The prompts on the run's own streams. The prompts pick their colours when
 * their bundle loads; when chatctl decided on no colour (--no-color,
 * NO_COLOR, TERM=dumb), their SGR sequences are taken out on the way.
 */
export function createPrompter(ctx: Context, output: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }, color: boolean): Prompter {
  // A prompt ends the stream it writes to when it is done: each one gets a
  // stream of its own that passes writes on and never ends the real one.
  const ctxOf = () => ({ signal: ctx.signal, clearPromptOnDone: false, input: ctx.io.raw.stdin, output: passOn(output, color) });
  return {
    name: () => input({ message: 'Endpoint name (1 to 80 characters)', validate: promptedNameIssue }, ctxOf()),
    url: () => input({ message: 'Destination URL (https)', validate: promptedUrlIssue }, ctxOf()),
    events: () =>
      checkbox(
        {
          message: 'Event types (space to select, enter to confirm)',
          choices: EVENT_TYPES.map((value) => ({ value })),
          required: true,
          pageSize: EVENT_TYPES.length,
        },
        ctxOf(),
      ),
    expectedVersion: () =>
      input(
        {
          message: "Endpoint's current version",
          validate: (v) => {
            try {
              parseExpectedVersion(v.trim());
              return true;
            } catch (err) {
              return (err as Error).message.replace(/^invalid --expected-version "[^"]*": /, '');
            }
          },
        },
        ctxOf(),
      ).then((v) => v.trim()),
    mode: () =>
      select(
        {
          message: 'Rotation mode',
          choices: [
            { value: 'overlap', name: 'overlap', description: 'new secret now; the old one keeps working for a grace period, so receivers can switch without failed deliveries' },
            { value: 'immediate', name: 'immediate', description: 'new secret now; the old one stops working at once (for a leaked secret)' },
          ],
        },
        ctxOf(),
      ),
    confirmImmediate: (endpointId) =>
      confirm(
        {
          message: `Rotate ${endpointId} immediately? The current secret stops working at once and deliveries signed with it will fail verification.`,
          default: false,
        },
        ctxOf(),
      ),
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
  return Object.defineProperties(plain, {
    isTTY: { get: () => out.isTTY },
    columns: { get: () => out.columns },
    rows: { get: () => out.rows },
  });
}
