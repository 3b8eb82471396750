// chatctl exit-codes: the table of exit codes (README, Exit codes), printed from the table in code.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { writeJson } from '../../output/io.js';
import { EXIT_CODE_ROWS, EXIT_FOR_API_CODE } from '../../errors/cli-error.js';

const text = () => ['CODE  MEANING', ...EXIT_CODE_ROWS.map(([code, meaning, api]) => `${String(code).padStart(4)}  ${meaning}${api ? `\n      API codes: ${api}` : ''}`)].join('\n') + '\n';

/** `--json`: each code with the spec's error codes that end with it exactly, and the table's rule (which covers codes beyond the spec). */
function json() {
  const apiCodes = (code: number) => Object.entries(EXIT_FOR_API_CODE).flatMap(([api, exit]) => (exit === code ? [api] : []));
  return { exitCodes: EXIT_CODE_ROWS.map(([code, meaning, rule]) => ({ code, meaning, apiCodes: apiCodes(code), rule })) };
}

export function registerExitCodes(cmd: Command, f: Factory): void {
  const { ctx } = f;
  cmd
    .addHelpText('after', examples('chatctl exit-codes', "chatctl exit-codes --json | jq '.exitCodes[] | select(.code == 7)'") + '\n' + text())
    .action(() => (f.state().output.json ? writeJson(ctx.io, json()) : ctx.io.stdout.write(text())));
}
