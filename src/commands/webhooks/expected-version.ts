// The --expected-version of rotate and reactivate when it is not given, or
// given as `last`: the version this machine last saw of the endpoint (its
// facts: docs/inventory.md). At a terminal that version is used and said;
// without one (CI, --no-input, no terminal) the flag stays required, and
// `--expected-version last` asks for the last-seen version on purpose.
import type { Factory } from '../app.js';
import type { Prompter } from '../../prompts/prompter.js';
import { usageError } from '../../errors/cli-error.js';
import { VERSION_SOURCES, missingFlagError } from '../../errors/explain.js';
import { EndpointFacts } from '../../secret/facts.js';
import { scopeKey } from '../../secret/record.js';
import { escapeInline } from '../../output/json.js';

/** The expected version to send, as a string for the body's parser. */
export async function expectedVersionFor(f: Factory, endpointId: string, given: string | undefined, prompter: Prompter | undefined): Promise<string> {
  if (given !== undefined && given !== 'last') return given;
  const { ctx } = f;
  const state = f.state();
  // No scope set: nothing seen here can be its; the request's own check says what is missing.
  let scope: string | undefined;
  try {
    scope = scopeKey(state.connection().scope);
  } catch (err) {
    if (given === 'last') throw err;
    scope = undefined;
  }
  const last = scope === undefined ? undefined : EndpointFacts.read(ctx.configDir, scope, endpointId).lastVersion();
  const id = escapeInline(endpointId);
  if (given === 'last') {
    if (!last) throw usageError(`--expected-version last: this machine has seen no version of endpoint ${id} in ${escapeInline(scope!)}`, VERSION_SOURCES);
    ctx.io.notice(`expected version ${last.version} (--expected-version last), as this machine last saw it at ${escapeInline(last.at)}`);
    return String(last.version);
  }
  if (last && state.interactive) {
    ctx.io.notice(`expected version ${last.version}, as this machine last saw it at ${escapeInline(last.at)}; pass --expected-version to set it`);
    return String(last.version);
  }
  if (prompter) return prompter.expectedVersion();
  if (last) {
    throw usageError(
      'missing --expected-version',
      `this machine last saw version ${last.version} of endpoint ${id} (at ${escapeInline(last.at)}): pass --expected-version ${last.version}, or --expected-version last to use the last-seen version without naming it`,
    );
  }
  throw missingFlagError('--expected-version');
}
