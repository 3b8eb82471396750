// Where create's or rotate's one-time secret goes, decided before anything
// is sent (docs/secrets.md): the sinks given, else the JSON on stdout
// (--json), else the terminal (stdout a TTY and CI not set); anything else
// is refused with exit 2, so a run that could not deliver the secret never
// asks the server for one.
import { usageError } from '../errors/cli-error.js';
import { hasIdPlaceholder, parseSinks, secretFileSpec, sinksFor, STDOUT_DISCARDS, type Sink, type SinkSettings } from './sinks.js';

export interface SecretPlan {
  sinks: Sink[];
  /** With no sink: the JSON document on stdout, or the terminal. */
  fallback?: 'json' | 'tty';
}

export interface SecretPlanInput {
  secretTo?: readonly string[] | undefined;
  secretFile?: string | undefined;
  force: boolean;
  json: boolean;
  /** --query: the JSON output is cut down to what an expression selects, so it cannot carry the secret. */
  query?: boolean;
  stdoutIsTTY: boolean;
  /** Standard output is /dev/null (or was closed). */
  stdoutDiscards?: boolean;
  dryRun: boolean;
  /** CI is set (the run-state's): no secret on a terminal either. */
  ci?: boolean | undefined;
  cwd: string;
  env: Record<string, string | undefined>;
  /**
   * rotate: the endpoint id, which `{id}` in a file: or env-file: path stands
   * for (as in `rotate --from`). Without it (create: the id is not known
   * before the server answers) a path with `{id}` is refused.
   */
  endpointId?: string | undefined;
}

export function planSecret(input: SecretPlanInput): SecretPlan {
  const specs = [...(input.secretFile !== undefined ? [secretFileSpec(input.secretFile)] : []), ...(input.secretTo ?? [])];
  const settings: SinkSettings = { cwd: input.cwd, env: input.env, json: input.json, stdoutIsTTY: input.stdoutIsTTY, stdoutDiscards: input.stdoutDiscards, force: input.force };
  const sinks = idSubstituted(parseSinks(specs, { ...settings, idPlaceholder: true }), input.endpointId, settings);
  if (sinks.length > 0) return { sinks };
  if (input.json) {
    // What --query selects is a part of the document: an expression that
    // left the secret out would drop it after the server made it. --query
    // prints the secret nowhere; it goes to a destination of its own.
    if (input.query && !input.dryRun)
      throw usageError(
        '--query prints part of the JSON output, which is no place for the signing secret',
        'say where the secret goes with --secret-to (file:PATH, env-file:PATH#NAME, exec:COMMAND, github-output:NAME); the JSON then holds "secret": null and where it went. For $(…) capture of the secret itself: --secret-to stdout, without --json and --query',
      );
    if (input.stdoutDiscards && !input.dryRun)
      throw usageError(`${STDOUT_DISCARDS} with the JSON document`, 'say where it goes with --secret-to (file:PATH, env-file:PATH#NAME, exec:COMMAND), or send stdout somewhere it is kept');
    return { sinks, fallback: 'json' };
  }
  const ci = Boolean(input.ci);
  // A dry run sends nothing, so no secret comes back to place.
  if (input.dryRun || (input.stdoutIsTTY && !ci)) return { sinks, fallback: 'tty' };
  throw usageError(
    ci ? 'refusing to print the signing secret: CI is set, and a job log keeps whatever is printed' : 'refusing to print the signing secret: standard output is not a terminal',
    'say where it goes with --secret-to (file:PATH — or --secret-file PATH —, env-file:PATH#NAME, exec:COMMAND, or stdout for $(…) capture), or use --json to receive it in the JSON output',
  );
}

/** `{id}` in a path replaced by the endpoint id and that path checked, or refused where no id is known yet (exit 2, nothing sent). */
function idSubstituted(sinks: Sink[], endpointId: string | undefined, settings: SinkSettings): Sink[] {
  if (endpointId !== undefined) return sinksFor(sinks, endpointId, settings);
  const withId = sinks.find(hasIdPlaceholder);
  if (withId)
    throw usageError(
      `--secret-to ${withId.to}: {id} stands for the endpoint id, which is not known before the server answers`,
      'name the file itself; {id} can be used with webhooks rotate, which knows the endpoint id',
    );
  return sinks;
}
