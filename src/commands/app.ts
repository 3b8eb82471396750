// The factory: the one way a command reaches what it needs, each part made
// when first asked for (help and completion never read the config or build
// a client). Each command group registers itself with it in its own
// register.ts, and every action hands it to its command's run function;
// src/app/cli.ts makes it and only lists the groups.
import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { Prompter } from '../prompts/prompter.js';
import type { RunState } from '../run/state.js';
import type { ClientExtras, RunClient } from '../run/webhooks-client.js';
import { usageError } from '../errors/cli-error.js';
import { didYouMean } from '../errors/explain.js';

export interface Factory {
  /** The world of the run: environment, streams, folders, clock, random source, transport. */
  readonly ctx: Context;
  /** The run's settings, worked out once from the flags, the environment and the config: output mode, dry run, profile, scope, token, retry settings. */
  state(): RunState;
  /** A prompter when prompts are allowed (both stdin and stdout terminals, no --no-input/CI), else undefined. */
  prompter(): Promise<Prompter | undefined>;
  /** The management API's client for this run: scope, token, retries, transport (or the dry run's). */
  client(extras?: ClientExtras): Promise<RunClient>;
}

export type Register = (parent: Command, f: Factory) => void;

/** An "Examples:" block for help text. */
export const examples = (...lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** commander's argParser for repeatable options. */
export const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/**
 * A value from a fixed list, else a usage error with the nearest valid one
 * suggested. Commander keeps `.choices()` for help and completion; this
 * parser replaces its check, whose message has no suggestion.
 */
export const oneOf = (label: string, choices: readonly string[]) => (value: string) => {
  if (choices.includes(value)) return value;
  const list = `${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}`;
  throw usageError(`invalid ${label} "${value}": must be ${list}`, didYouMean(value, choices));
};
