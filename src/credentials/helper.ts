// A profile's token command (`profile set P --token-command CMD`), run by
// /bin/sh -c with 10 s to print the token. No stdin (it cannot eat a manifest
// piped to `rotate --from -`); its stderr may echo secrets, so it is dropped.
import { withoutCredentials } from '../system/process.js';
import { spawn } from 'node:child_process';
import type { Env } from '../context.js';
import { configError, interrupted } from '../errors/cli-error.js';
import { escapeInline } from '../output/json.js';
import { isHeaderSafe } from '../http/wire-checks.js';
import { childOutcome, formatSeconds } from './keyring.js';
import { helperLabel, MAX_TOKEN_BYTES } from './source.js';

export const HELPER_LIMIT_MS = 10_000;
/** The largest token and some whitespace around it: a helper that prints more is printing something else. */
const MAX_OUTPUT_BYTES = MAX_TOKEN_BYTES + 1024;
/** Once the shell has exited: a process it left in the background may hold the pipe open for good. */
const AFTER_EXIT_MS = 100;

/** The token the helper of `profile` printed, or a configuration error (exit 3). */
export async function runTokenCommand(profile: string, command: string, opts: { env: Env; signal?: AbortSignal | undefined; limitMs?: number | undefined }): Promise<string> {
  const limitMs = opts.limitMs ?? HELPER_LIMIT_MS;
  const env: Env = withoutCredentials({ ...opts.env, CHATCTL_PROFILE: profile });
  const what = `the token command of profile "${escapeInline(profile)}" (${helperLabel(command)})`;
  const hint = `run the command yourself to see what it prints, or change it: chatctl profile set ${profile} --token-command 'CMD'`;
  const fail = (how: string) => configError(`${what} ${how}`, hint);

  // Its own process group: the limit ends what it started too, not the shell alone.
  const child = spawn('/bin/sh', ['-c', command], { env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'ignore'], detached: process.platform !== 'win32', windowsHide: true });
  const kill = () => {
    try {
      if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
      else child.kill('SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  };
  let afterExit: NodeJS.Timeout | undefined;
  type Outcome = { out: Buffer; code: number | null; signal: NodeJS.Signals | null } | 'timeout' | 'too-long';
  const outcome = await childOutcome<Outcome>(kill, limitMs, 'timeout', opts.signal, (end) => {
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout!.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_OUTPUT_BYTES) {
        kill();
        end('too-long');
      } else chunks.push(c);
    });
    child.on('exit', (code, signal) => {
      // After one more poll of the pipe: a loop busy past the wait still reads what is there.
      afterExit = setTimeout(() => {
        setImmediate(() => {
          child.stdout!.destroy();
          end({ out: Buffer.concat(chunks), code, signal });
        });
      }, AFTER_EXIT_MS);
    });
    child.on('error', (err) => end(err));
    child.on('close', (code, signal) => end({ out: Buffer.concat(chunks), code, signal }));
  }).finally(() => clearTimeout(afterExit));

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
