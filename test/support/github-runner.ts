// What the GitHub Actions runner does with a shell step: runStep runs it as
// the runner runs `shell: bash`. And the runner's reading of $GITHUB_OUTPUT and $GITHUB_ENV,
// written from its documented format, for tests to read back what chatctl
// appended: one `NAME=VALUE` per line, or a multi-line value
// `NAME<<DELIMITER`, its lines, then a line that is exactly DELIMITER. A
// line with both takes the form whose marker comes first; a heredoc that
// never ends, or a line that is neither, makes the whole file invalid.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './run.js';
import { scaled } from './slowdown.js';

export function parseRunnerFile(text: string): Map<string, string> {
  const values = new Map<string, string>();
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const eq = line.indexOf('=');
    const heredoc = line.indexOf('<<');
    if (eq >= 0 && (heredoc < 0 || eq < heredoc)) {
      const name = line.slice(0, eq);
      if (name === '') throw new Error(`line ${i + 1}: no name`);
      values.set(name, line.slice(eq + 1));
      continue;
    }
    if (heredoc <= 0) throw new Error(`line ${i + 1}: neither NAME=VALUE nor NAME<<DELIMITER: ${JSON.stringify(line)}`);
    const name = line.slice(0, heredoc);
    const delimiter = line.slice(heredoc + 2);
    if (delimiter === '') throw new Error(`line ${i + 1}: an empty delimiter`);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j] !== delimiter; j++) body.push(lines[j]!);
    if (j >= lines.length) throw new Error(`line ${i + 1}: the value of ${name} never ends (no line "${delimiter}")`);
    values.set(name, body.join('\n'));
    i = j;
  }
  return values;
}

/**
 * Runs a shell script as a runner does for `shell: bash` (bash --noprofile
 * --norc -eo pipefail FILE), stdout and stderr into one log in the order
 * written. As on a runner, the step writes to a pipe, not a file: the log is
 * what the other end of the pipe reads.
 */
export function runStep(script: string, env: Record<string, string>, cwd: string): { status: number | null; log: string } {
  const dir = tempDir('step');
  const file = join(dir, 'step.sh');
  writeFileSync(file, script);
  const logFile = join(dir, 'log');
  const r = spawnSync('bash', ['-c', 'bash --noprofile --norc -eo pipefail "$0" 2>&1 | cat > "$1"; exit "${PIPESTATUS[0]}"', file, logFile], {
    cwd,
    env,
    stdio: 'ignore',
    timeout: scaled(120_000),
  });
  return { status: r.status, log: readFileSync(logFile, 'utf8') };
}

/**
 * A committed journal as chatctl finds it `ms` later: its times ("at",
 * "runAt") moved back. A job's runs are months apart for the sandbox's clock;
 * chatctl, a child process, reads the real one.
 */
export function journalAged(path: string, ms: number): void {
  if (!existsSync(path)) return;
  const text = readFileSync(path, 'utf8');
  writeFileSync(
    path,
    text.replace(/"(at|runAt)":"([^"]+)"/g, (_m, k: string, at: string) => `"${k}":"${new Date(Date.parse(at) - ms).toISOString()}"`),
  );
}
