// chatctl exit-codes: the table of exit codes (README, Exit codes), printed from the table in code.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { writeJson } from '../../output/io.js';
import { EXIT_CODE_ROWS, EXIT_FOR_API_CODE } from '../../errors/cli-error.js';

export function exitCodesText(): string {
  const lines = ['CODE  MEANING', ...EXIT_CODE_ROWS.map(([code, meaning, api]) => `${String(code).padStart(4)}  ${meaning}${api ? `\n      API codes: ${api}` : ''}`)];
  return lines.join('\n') + '\n';
}

export interface ExitCodeEntry {
  code: number;
  meaning: string;
  /** The spec's error codes that end with this status, exactly. */
  apiCodes: string[];
  /** The table's rule, which also covers codes beyond the spec ("every code ending in _version_conflict"). */
  rule: string;
}

/** `chatctl exit-codes --json`: the same table, for scripts. */
export function exitCodesJson(): { exitCodes: ExitCodeEntry[] } {
  return {
    exitCodes: EXIT_CODE_ROWS.map(([code, meaning, rule]) => ({
      code,
      meaning,
      apiCodes: Object.entries(EXIT_FOR_API_CODE)
        .filter(([, exit]) => exit === code)
        .map(([api]) => api),
      rule,
    })),
  };
}

export function registerExitCodes(cmd: Command, f: Factory): void {
  const { ctx } = f;
  cmd
    .addHelpText('after', examples('chatctl exit-codes', "chatctl exit-codes --json | jq '.exitCodes[] | select(.code == 7)'") + '\n' + exitCodesText())
    .action(() => (f.state().output.json ? writeJson(ctx.io, exitCodesJson()) : ctx.io.stdout.write(exitCodesText())));
}
