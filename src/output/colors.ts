// Colour through chalk, at the level chatctl decided (output/io.ts
// colorEnabled: TTY, NO_COLOR, --no-color, FORCE_COLOR), not chalk's own
// guess. chalk is loaded only when some stream is in colour: a run into a
// pipe pays nothing for it.
export interface Palette {
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  bold(s: string): string;
  dim(s: string): string;
}

const identity = (s: string) => s;
export const PLAIN: Palette = { red: identity, green: identity, yellow: identity, bold: identity, dim: identity };

export async function loadPalettes(color: { stdout: boolean; stderr: boolean }): Promise<{ stdout: Palette; stderr: Palette }> {
  if (!color.stdout && !color.stderr) return { stdout: PLAIN, stderr: PLAIN };
  const { Chalk } = await import('chalk');
  const c = new Chalk({ level: 1 });
  const p: Palette = { red: c.red, green: c.green, yellow: c.yellow, bold: c.bold, dim: c.dim };
  return { stdout: color.stdout ? p : PLAIN, stderr: color.stderr ? p : PLAIN };
}
