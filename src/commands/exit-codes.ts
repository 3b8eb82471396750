// chatctl exit-codes: contract section 7, printed from the table in code.
import { EXIT_CODE_ROWS } from '../errors/exit-codes.js';

export function exitCodesText(): string {
  const lines = ['CODE  MEANING', ...EXIT_CODE_ROWS.map(([code, meaning, api]) => `${String(code).padStart(4)}  ${meaning}${api ? `\n      API codes: ${api}` : ''}`)];
  return lines.join('\n') + '\n';
}
