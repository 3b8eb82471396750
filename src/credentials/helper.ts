// A profile's credential helper (`profile set P --token-command CMD`): CMD
// is run by /bin/sh -c when a command needs the token, and has 10 s to print
// it on stdout (surrounding whitespace ignored).
//
// What it gets: the run's environment without CHATCTL_TOKEN and
// CHATCTL_CSRF_TOKEN (credentials of chatctl's own that a helper has no use
// for), plus CHATCTL_PROFILE naming the profile, so one helper can serve
// several; no stdin (it cannot eat a manifest piped to `rotate --from -`).
// What is shown of it: nothing. Its stdout is the token, and its stderr may
// echo it or other secrets, so both are kept from the output; a failure
// names the profile and the command, and says how it failed.
import { withoutCredentials } from './variables.js';
import { spawn } from 'node:child_process';
import type { Env } from '../context.js';
import { configError, interrupted } from '../errors/cli-error.js';
import { escapeInline } from '../output/json.js';
import { isHeaderSafe } from '../http/wire-checks.js';
import { formatSeconds } from './keyring.js';
import { helperLabel } from './source.js';
import { MAX_TOKEN_BYTES } from './bound.js';

/** How long a helper has to print the token. */
export const HELPER_LIMIT_MS = 10_000;
/** The largest token and some whitespace around it: a helper that prints more is printing something else. */
const MAX_OUTPUT_BYTES = MAX_TOKEN_BYTES + 1024;
/**
 * Once the shell has exited, how long the end of its output is awaited:
 * what it printed is in the pipe already, and a process it left in the
 * background (an agent it started) may hold the pipe open for good.
 */
const AFTER_EXIT_MS = 100;

export interface HelperOptions {
  env: Env;
  signal?: AbortSignal | undefined;
  limitMs?: number | undefined;
}

/** Runs the helper of `profile` and returns the token it printed, or throws a configuration error (exit 3). */
export async function runTokenCommand(profile: string, command: string, opts: HelperOptions): Promise<string> {
  const limitMs = opts.limitMs ?? HELPER_LIMIT_MS;
  const env: Env = withoutCredentials({ ...opts.env, CHATCTL_PROFILE: profile });
  const what = `the token command of profile "${escapeInline(profile)}" (${helperLabel(command)})`;
  const hint = `run the command yourself to see what it prints, or change it: chatctl profile set ${profile} --token-command 'CMD'`;
  const fail = (how: string) => configError(`${what} ${how}`, hint);

  const outcome = await new Promise<{ out: Buffer; code: number | null; signal: NodeJS.Signals | null } | 'timeout' | 'too-long' | Error>((resolve) => {
    // Its own process group, so that the limit ends the command and
    // whatever it started (a `sleep` under the shell), not the shell alone.
    const child = spawn('/bin/sh', ['-c', command], { env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'ignore'], detached: process.platform !== 'win32', windowsHide: true });
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    let afterExit: NodeJS.Timeout | undefined;
    const end = (r: Parameters<typeof resolve>[0]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(afterExit);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve(r);
    };
    const kill = () => {
      try {
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      kill();
      end('timeout');
    }, limitMs);
    const onAbort = () => {
      kill();
      end(Object.assign(new Error('interrupted'), { name: 'AbortError' }));
    };
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout!.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_OUTPUT_BYTES) {
        kill();
        end('too-long');
      } else chunks.push(c);
    });
    child.on('exit', (code, signal) => {
      // The immediate comes after one more poll of the pipe: a loop that was
      // busy past the wait still reads what is in the pipe first.
      afterExit = setTimeout(() => {
        setImmediate(() => {
          child.stdout!.destroy();
          end({ out: Buffer.concat(chunks), code, signal });
        });
      }, AFTER_EXIT_MS);
    });
    child.on('error', (err) => end(err));
    child.on('close', (code, signal) => end({ out: Buffer.concat(chunks), code, signal }));
  });

  if (outcome instanceof Error) {
    if (outcome.name === 'AbortError') throw interrupted();
    throw fail(`could not be started (${(outcome as NodeJS.ErrnoException).code ?? outcome.message})`);
  }
  if (outcome === 'timeout') throw fail(`printed no token within ${formatSeconds(limitMs)}`);
  if (outcome === 'too-long') throw fail(`printed more than ${MAX_OUTPUT_BYTES} bytes; a token over 64 KiB (${MAX_TOKEN_BYTES} bytes) is refused`);
  if (outcome.signal) throw fail(`was ended by ${outcome.signal}`);
  if (outcome.code !== 0) throw fail(`failed (exit status ${outcome.code})`);
  const token = outcome.out.toString('utf8').trim();
  if (token === '') throw fail('printed nothing');
  if (/\s/.test(token) || !isHeaderSafe(token)) throw fail('printed something that is not a token (whitespace or characters that cannot be sent in an HTTP header)');
  return token;
}
