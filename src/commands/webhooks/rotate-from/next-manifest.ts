// `--next-manifest OUT` (docs/fleet.md): once the run ends, each item of the
// manifest in its order with its version after the run; its mode if its line gave one.
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Context } from '../../../context.js';
import { acquireLock, systemLockHost, type LockSubject } from '../../../system/lock.js';
import { makeFolders, writeFileAtomic } from '../../../system/files.js';
import type { RotationMode } from '../../../api/schemas.js';
import { CliError, EXIT, usageError } from '../../../errors/cli-error.js';
import { currentVersionOf } from '../../../errors/explain.js';
import { checkFileTarget } from '../../../secret/deliver.js';
import type { ManifestItem } from './manifest.js';
import type { ItemResult } from './runner.js';

/** The endpoint's version after this run, as a result line tells it: a 7 names the current one, a 13 the one its change made. */
export function versionAfter(result: ItemResult): number | undefined {
  if (result.ok) return result.version;
  if (result.exitCode === EXIT.versionConflict || result.exitCode === EXIT.secretNotDelivered) return currentVersionOf(result.error.details);
  return undefined;
}

const NEXT_MANIFEST: LockSubject = {
  name: 'the next manifest',
  error: usageError,
  busy: (v, lockPath) =>
    usageError(
      `the next manifest is being written by another chatctl run (${v.owner ? `${v.owner}; ` : ''}lock file ${lockPath})`,
      'give each job its own --next-manifest, or wait for that run to finish (remove the lock file only if that process is not chatctl)',
    ),
};

export class NextManifest {
  private readonly lines = new Map<string, { version: number; mode?: RotationMode }>();
  private release: (() => void) | undefined;

  private constructor(readonly path: string) {}

  /** Before anything is sent: a regular file or none, in a folder this user can write, not the journal or its lock by any name. */
  static plan(path: string, journalPath: string | undefined): NextManifest {
    const what = `--next-manifest ${path}`;
    if (journalPath !== undefined && [journalPath, `${journalPath}.lock`].some((j) => j === path || sameFile(j, path)))
      throw usageError(`${what}: that is the journal`, 'give the next manifest a file of its own, e.g. the manifest itself');
    checkFileTarget(path, true, what);
    return new NextManifest(path);
  }

  /** Held for the run against a second run naming it by any path (exit 2): a lock by its real path, and one by its inode (a hard link). */
  async lock(ctx: Pick<Context, 'now' | 'sleep' | 'random' | 'signal' | 'configDir'>): Promise<void> {
    const take = (path: string) => acquireLock(path, { host: systemLockHost(ctx), signal: ctx.signal, waitMs: 0, subject: NEXT_MANIFEST });
    const byPath = await take(`${realPathOf(this.path)}.lock`);
    this.release = byPath.release;
    const st = statSync(this.path, { throwIfNoEntry: false });
    if (!st) return;
    try {
      makeFolders(join(ctx.configDir, 'locks'), 0o700);
      const byInode = await take(join(ctx.configDir, 'locks', `next-manifest-${st.dev}-${st.ino}.lock`));
      this.release = () => {
        byInode.release();
        byPath.release();
      };
    } catch (err) {
      this.unlock();
      throw err;
    }
  }

  unlock(): void {
    this.release?.();
    this.release = undefined;
  }

  add(item: ManifestItem): void {
    this.lines.set(item.endpointId, { version: item.expectedVersion, ...(item.lineMode !== undefined ? { mode: item.lineMode } : {}) });
  }

  settle(result: ItemResult): void {
    const line = this.lines.get(result.endpointId);
    const version = versionAfter(result);
    if (line && version !== undefined) line.version = version;
  }

  /** Written whole or not at all, with the mode of the file it replaces (0600 when new). Throws a CliError (exit 1). */
  write(): void {
    let text = '';
    for (const [endpointId, { version, mode }] of this.lines) text += JSON.stringify({ endpointId, expectedVersion: version, ...(mode !== undefined ? { mode } : {}) }) + '\n';
    try {
      const st = statSync(this.path, { throwIfNoEntry: false });
      writeFileAtomic(this.path, text, { mode: st?.isFile() ? st.mode & 0o777 : 0o600 });
    } catch (err) {
      throw new CliError('internal_error', `cannot write the next manifest ${this.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, EXIT.unexpected, {
        hint: 'the run itself is over (its results say what it did): make room or fix the folder, then write the next manifest by hand from the results',
      });
    }
  }

  get size(): number {
    return this.lines.size;
  }
}

function sameFile(a: string, b: string): boolean {
  const x = statSync(a, { throwIfNoEntry: false });
  const y = statSync(b, { throwIfNoEntry: false });
  return x !== undefined && y !== undefined && x.dev === y.dev && x.ino === y.ino;
}

function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return path;
    }
  }
}
