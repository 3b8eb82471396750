// Regenerates completions/ from the built program (`npm run completions`).
// test/completion/drift.test.ts fails when the files and the program differ.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const files = { bash: 'chatctl.bash', zsh: '_chatctl', fish: 'chatctl.fish' };
for (const [shell, file] of Object.entries(files)) {
  const text = execFileSync(process.execPath, [new URL('../bin/chatctl.js', import.meta.url).pathname, 'completion', shell], { encoding: 'utf8' });
  writeFileSync(new URL(`../completions/${file}`, import.meta.url), text);
}
