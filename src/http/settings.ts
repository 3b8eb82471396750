// The request settings of a run: retries, the limit for one attempt, the
// limit for the whole command. Each from the first of flag, environment,
// default; a bad flag is a usage error (2), a bad variable a configuration
// error (3). Pure: the caller hands in the flags and the environment.
import { configError, usageError } from '../errors/cli-error.js';
import { nonEmpty } from '../input/values.js';

/** The global options the request settings read, as commander parses them. */
export interface RequestFlags {
  maxRetries?: string | undefined;
  timeout?: string | undefined;
  deadline?: string | undefined;
}

export interface RequestSettings {
  maxRetries: number;
  timeoutMs: number;
  /** --deadline / CHATCTL_DEADLINE: the whole command, retries and waits included. */
  deadlineMs: number;
}

export const DEFAULT_MAX_RETRIES = 4;
export const DEFAULT_TIMEOUT_SECONDS = 30;
export const DEFAULT_DEADLINE_SECONDS = 300;
export const MAX_DEADLINE_SECONDS = 86_400;

export function resolveRequestSettings(flags: RequestFlags, env: NodeJS.ProcessEnv): RequestSettings {
  const maxRetries = pickNumber(flags.maxRetries, '--max-retries', env.CHATCTL_MAX_RETRIES, 'CHATCTL_MAX_RETRIES', DEFAULT_MAX_RETRIES, parseRetries);
  const timeout = pickNumber(flags.timeout, '--timeout', env.CHATCTL_TIMEOUT, 'CHATCTL_TIMEOUT', DEFAULT_TIMEOUT_SECONDS, parseTimeout);
  const deadline = pickNumber(flags.deadline, '--deadline', env.CHATCTL_DEADLINE, 'CHATCTL_DEADLINE', DEFAULT_DEADLINE_SECONDS, parseDeadline);
  return { maxRetries, timeoutMs: Math.round(timeout * 1000), deadlineMs: Math.round(deadline * 1000) };
}

function pickNumber(flag: string | undefined, flagName: string, envValue: string | undefined, envName: string, fallback: number, parse: (s: string) => number | undefined): number {
  if (flag !== undefined) {
    const n = parse(flag);
    if (n === undefined) throw usageError(`invalid ${flagName} "${flag}"`, hintFor(flagName));
    return n;
  }
  if (nonEmpty(envValue) !== undefined) {
    const n = parse(envValue!);
    if (n === undefined) throw configError(`invalid ${envName} "${envValue}"`, hintFor(flagName));
    return n;
  }
  return fallback;
}

const hintFor = (flag: string) =>
  flag === '--timeout'
    ? 'a number of seconds greater than 0, at most 3600'
    : flag === '--deadline'
      ? `a number of seconds greater than 0, at most ${MAX_DEADLINE_SECONDS}`
      : 'a whole number from 0 to 100';

export function parseRetries(s: string): number | undefined {
  if (!/^\d{1,3}$/.test(s.trim())) return undefined;
  const n = Number(s.trim());
  return n <= 100 ? n : undefined;
}

export function parseTimeout(s: string): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(s.trim())) return undefined;
  const n = Number(s.trim());
  return n > 0 && n <= 3600 ? n : undefined;
}

export function parseDeadline(s: string): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(s.trim())) return undefined;
  const n = Number(s.trim());
  return n > 0 && n <= MAX_DEADLINE_SECONDS ? n : undefined;
}
