// How chatctl reads the values of its own variables and flags: an empty string is unset, and a switch such as CI or
// CHATCTL_NO_INPUT is on unless it says otherwise (docs/configuration.md).

/** A flag or variable given as the empty string counts as not given. */
export const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);

/** On unless unset, empty, or one of 0, false, no, off (any case). */
export function isTruthyEnv(value: string | undefined): boolean {
  return value !== undefined && !['', '0', 'false', 'no', 'off'].includes(value.trim().toLowerCase());
}

/** CI is set: the one place chatctl reads it; commands ask the run-state (`state.ci`). */
export const isCi = (env: NodeJS.ProcessEnv): boolean => isTruthyEnv(env.CI);

/** Prompts are off: --no-input, CHATCTL_NO_INPUT or CI. */
export function noInput(flags: { noInput?: boolean | undefined }, env: NodeJS.ProcessEnv): boolean {
  return Boolean(flags.noInput) || isTruthyEnv(env.CHATCTL_NO_INPUT) || isCi(env);
}
