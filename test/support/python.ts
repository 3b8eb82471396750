// The Python interpreter the pseudo-terminal driver runs on. `python3` on PATH
// may be a version manager's shim (pyenv's costs about 0.4 s of CPU a call,
// more than the session it drives), so the real executable is resolved once.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

function resolvePython(): string {
  if (existsSync('/usr/bin/python3')) return '/usr/bin/python3';
  try {
    return execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim() || 'python3';
  } catch {
    return 'python3';
  }
}

export const PYTHON = resolvePython();
