// chatctl auth token: the token in effect on stdout, for `$(…)` in scripts.
import type { Factory } from '../app.js';
import { localError, usageError } from '../../errors/cli-error.js';
import { noTokenError, sourceWords } from '../../credentials/source.js';
import { writeJson } from '../../output/io.js';

/**
 * On a terminal it asks first (unless --yes), since the token would stay on
 * the screen and in the scrollback.
 */
export async function runAuthToken(opts: { yes?: boolean }, f: Factory): Promise<void> {
  const { ctx } = f;
  const prompter = await f.prompter();
  const state = f.state();
  const t = await state.token();
  if (!t) throw noTokenError(state.profile().name);
  if (ctx.io.stdout.isTTY && !opts.yes) {
    if (!prompter) throw usageError('--yes is required to print the token on a terminal when not running interactively');
    if (!(await prompter.confirmShowToken(sourceWords(t.source, t.profile)))) throw localError('interrupted', 'not confirmed: the token was not printed');
  }
  // Masked (in GitHub Actions) before it is printed.
  ctx.io.stdoutIsData();
  ctx.io.scrubber.announceValue(t.token);
  if (state.output.json) writeJson(ctx.io, { token: t.token, source: t.source, profile: t.source === 'env' ? null : t.profile }, 'one-line');
  else ctx.io.stdout.write(t.token + '\n');
}
