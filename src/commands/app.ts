// What a command's registration needs from the program: the run's context,
// the parsed global options and a prompter. Each command group registers
// itself with these in its own register.ts; src/cli.ts only lists them.
import type { Command } from 'commander';
import type { Context, GlobalOptions } from '../context.js';
import type { Prompter } from '../prompts/prompter.js';
import { usageError } from '../errors/cli-error.js';
import { didYouMean } from '../input/suggest.js';

export interface App {
  ctx: Context;
  globals(): GlobalOptions;
  /** A prompter when prompts are allowed (both stdin and stdout terminals, no --no-input/CI), else undefined. */
  prompter(): Promise<Prompter | undefined>;
}

export type Register = (parent: Command, app: App) => void;

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
