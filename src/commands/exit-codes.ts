// chatctl exit-codes: contract section 7, printed from the table in code.
import type { Command } from 'commander';
import type { App } from './app.js';
import { EXIT_CODE_ROWS } from '../errors/exit-codes.js';

export function exitCodesText(): string {
  const lines = ['CODE  MEANING', ...EXIT_CODE_ROWS.map(([code, meaning, api]) => `${String(code).padStart(4)}  ${meaning}${api ? `\n      API codes: ${api}` : ''}`)];
  return lines.join('\n') + '\n';
}

export function registerExitCodes(cmd: Command, { ctx }: App): void {
  cmd.addHelpText('after', '\n' + exitCodesText()).action(() => ctx.io.stdout.write(exitCodesText()));
}
