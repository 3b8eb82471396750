// A run's request settings, from flag, environment or default: a bad flag is a usage error (2), a bad variable exit 3.
import { configError, usageError } from '../errors/cli-error.js';
import { nonEmpty } from '../input/values.js';

/** The global options the request settings read, as commander parses them. */
export type RequestFlags = { maxRetries?: string | undefined; timeout?: string | undefined; deadline?: string | undefined };

export interface RequestSettings {
  maxRetries: number;
  timeoutMs: number;
  /** --deadline / CHATCTL_DEADLINE: the whole command, retries and waits included. */
  deadlineMs: number;
}

const parser = (pattern: RegExp, ok: (n: number) => boolean) => (s: string) => (pattern.test(s.trim()) && ok(Number(s.trim())) ? Number(s.trim()) : undefined);
const seconds = (max: number) => parser(/^\d+(\.\d+)?$/, (n) => n > 0 && n <= max);

const SETTINGS = {
  maxRetries: { flag: '--max-retries', env: 'CHATCTL_MAX_RETRIES', fallback: 4, hint: 'a whole number from 0 to 100', parse: parser(/^\d{1,3}$/, (n) => n <= 100) },
  timeout: { flag: '--timeout', env: 'CHATCTL_TIMEOUT', fallback: 30, hint: 'a number of seconds greater than 0, at most 3600', parse: seconds(3600) },
  deadline: { flag: '--deadline', env: 'CHATCTL_DEADLINE', fallback: 300, hint: 'a number of seconds greater than 0, at most 86400', parse: seconds(86_400) },
};

export function resolveRequestSettings(flags: RequestFlags, env: NodeJS.ProcessEnv): RequestSettings {
  const pick = (name: keyof typeof SETTINGS): number => {
    const { flag, env: variable, fallback, hint, parse } = SETTINGS[name];
    const given = flags[name];
    if (given !== undefined) {
      const n = parse(given);
      if (n === undefined) throw usageError(`invalid ${flag} "${given}"`, hint);
      return n;
    }
    const value = nonEmpty(env[variable]);
    if (value === undefined) return fallback;
    const n = parse(value);
    if (n === undefined) throw configError(`invalid ${variable} "${value}"`, hint);
    return n;
  };
  return { maxRetries: pick('maxRetries'), timeoutMs: Math.round(pick('timeout') * 1000), deadlineMs: Math.round(pick('deadline') * 1000) };
}
