// chatctl version [--json]: the version and what this copy was built from.
// The commit is recorded by the build (scripts/build.mjs asks git, when the
// sources are a git checkout); a build from a copy without git has none.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { writeJson } from '../../output/io.js';
import { packaging, singleExecutable, type Packaging } from '../../system/packaging.js';

declare const __CHATCTL_COMMIT__: string | null;
export const COMMIT: string | null = typeof __CHATCTL_COMMIT__ === 'string' ? __CHATCTL_COMMIT__ : null;

export interface VersionInfo {
  version: string;
  commit: string | null;
  node: string;
  platform: string;
  /** "npm", or "single-executable" for the executable `npm run package` builds. */
  packaging: Packaging;
  /** The single executable's build target (`linux-x64`, `linux-arm64`); null for the npm package, which is one for every platform. */
  target: string | null;
}

export function versionInfo(version: string): VersionInfo {
  return { version, commit: COMMIT, node: process.version, platform: `${process.platform}-${process.arch}`, packaging: packaging(), target: singleExecutable()?.target ?? null };
}

/** One line: the version first, as `--version` prints it, then the build. */
export function versionText(info: VersionInfo): string {
  return `${info.version}\ncommit ${info.commit ?? 'unknown'}, Node.js ${info.node}, ${info.platform}\n`;
}

export function registerVersion(cmd: Command, f: Factory): void {
  const { ctx } = f;
  cmd.addHelpText('after', examples('chatctl version', 'chatctl version --json', 'chatctl --version   # the version alone')).action(() => {
    const info = versionInfo(ctx.version);
    if (f.state().output.json) writeJson(ctx.io, info);
    else ctx.io.stdout.write(versionText(info));
  });
}
