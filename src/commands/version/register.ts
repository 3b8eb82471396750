// chatctl version [--json]: the version and what this copy was built from.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { writeJson } from '../../output/io.js';
import { packaging, singleExecutable } from '../../system/process.js';

declare const __CHATCTL_COMMIT__: string | null;

export function registerVersion(cmd: Command, f: Factory): void {
  const { ctx } = f;
  cmd.addHelpText('after', examples('chatctl version', 'chatctl version --json', 'chatctl --version   # the version alone')).action(() => {
    const commit = typeof __CHATCTL_COMMIT__ === 'string' ? __CHATCTL_COMMIT__ : null;
    // packaging: "npm" or "single-executable"; target: the executable's (`linux-x64`), null for npm, which is one for every platform.
    const info = { version: ctx.version, commit, node: process.version, platform: `${process.platform}-${process.arch}`, packaging: packaging(), target: singleExecutable()?.target ?? null };
    if (f.state().output.json) writeJson(ctx.io, info);
    else ctx.io.stdout.write(`${info.version}\ncommit ${info.commit ?? 'unknown'}, Node.js ${info.node}, ${info.platform}\n`);
  });
}
