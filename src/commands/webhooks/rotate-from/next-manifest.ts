// `rotate --from FILE --next-manifest OUT` (docs/fleet.md, "The next
// manifest"): once the run ends, the manifest of the next rotation, so that a
// monthly job runs the same command on what it wrote last time. One line per
// item of FILE, in FILE's order, with the endpoint's version after this run:
// the new one for a rotated item (also one that ended 13: the server applied
// it), the current one a 7 named, the one an earlier run recorded for an item
// skipped as done, else the one FILE gave. The item's mode is kept only when
// its line gave one. Comments and blank lines are not kept.
//
// Only the endpoint id, a version and a mode are held per item, in a Map
// (which keeps FILE's order), not the items themselves.
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Context } from '../../../context.js';
import { acquireLock, systemLockHost, type LockSubject } from '../../../fs/lock.js';
import { makeFolders, writeFileAtomic } from '../../../fs/files.js';
import type { RotationMode } from '../../../api/schemas.js';
import { CliError, EXIT, usageError } from '../../../errors/cli-error.js';
import { currentVersionOf } from '../../../errors/explain.js';
import { checkFileTarget } from '../../../secret/deliver.js';
import type { ManifestItem } from './manifest.js';
import type { ItemResult } from './runner.js';

/** The endpoint's version after this run, as a result line tells it; undefined when it does not. */
export function versionAfter(result: ItemResult): number | undefined {
  if (result.ok) return result.version;
  // A 7 names the current version; a 13 the version the applied change made.
  if (result.exitCode === EXIT.versionConflict || result.exitCode === EXIT.secretNotDelivered) return currentVersionOf(result.error.details);
  return undefined;
}

export class NextManifest {
  private readonly lines = new Map<string, { version: number; mode?: RotationMode }>();

  private constructor(
    readonly path: string,
    /** Frees the lock taken on the file for the run (lock()). */
    private release: (() => void) | undefined = undefined,
  ) {}

  /**
   * Checked before anything is sent: OUT is a regular file (replaced whole)
   * or absent, in a folder this user can write, and not the journal or its
   * lock, however either is named (the same device and inode, through a
   * link or another path, is the same file).
   */
  static plan(path: string, journalPath: string | undefined): NextManifest {
    const what = `--next-manifest ${path}`;
    if (journalPath !== undefined && [journalPath, `${journalPath}.lock`].some((j) => j === path || sameFile(j, path)))
      throw usageError(`${what}: that is the journal`, 'give the next manifest a file of its own, e.g. the manifest itself');
    checkFileTarget(path, true, what);
    return new NextManifest(path);
  }

  /**
   * Holds the file for this run: a second run naming the same file (by any
   * path: the lock is named after the file's real path) is refused, exit 2
   * naming the lock, before it sends anything. Released once it is written.
   */
  async lock(ctx: Pick<Context, 'now' | 'sleep' | 'random' | 'signal' | 'configDir'>): Promise<void> {
    const take = (path: string) => acquireLock(path, { host: systemLockHost(ctx), signal: ctx.signal, waitMs: 0, subject: NEXT_MANIFEST });
    const byPath = await take(lockPathOf(this.path));
    this.release = byPath.release;
    // The same file by another name in another folder (a hard link): by its device and inode, in this config folder.
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
      byPath.release();
      this.release = undefined;
      throw err;
    }
  }

  unlock(): void {
    this.release?.();
    this.release = undefined;
  }

  /** Every item of the manifest, in its order (the first pass): its version so far. */
  add(item: ManifestItem): void {
    this.lines.set(item.endpointId, { version: item.expectedVersion, ...(item.lineMode !== undefined ? { mode: item.lineMode } : {}) });
  }

  /** An item's result: its version after the run, when the result says. */
  settle(result: ItemResult): void {
    const line = this.lines.get(result.endpointId);
    const version = versionAfter(result);
    if (line && version !== undefined) line.version = version;
  }

  text(): string {
    let out = '';
    for (const [endpointId, { version, mode }] of this.lines) out += JSON.stringify({ endpointId, expectedVersion: version, ...(mode !== undefined ? { mode } : {}) }) + '\n';
    return out;
  }

  /** Written whole or not at all, with the mode of the file it replaces (0600 when new). Throws a CliError (exit 1). */
  write(): void {
    try {
      const st = statSync(this.path, { throwIfNoEntry: false });
      writeFileAtomic(this.path, this.text(), { mode: st?.isFile() ? st.mode & 0o777 : 0o600 });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new CliError('internal_error', `cannot write the next manifest ${this.path}: ${code}`, EXIT.unexpected, {
        hint: 'the run itself is over (its results say what it did): make room or fix the folder, then write the next manifest by hand from the results',
      });
    }
  }

  get size(): number {
    return this.lines.size;
  }
}

/** Whether two paths name one file (device and inode); false when either is absent. */
function sameFile(a: string, b: string): boolean {
  const x = statSync(a, { throwIfNoEntry: false });
  const y = statSync(b, { throwIfNoEntry: false });
  return x !== undefined && y !== undefined && x.dev === y.dev && x.ino === y.ino;
}

/** The lock of a next manifest: beside the file it names, after its real path (links resolved), so every name of one file shares it. */
function lockPathOf(path: string): string {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    try {
      real = join(realpathSync(dirname(path)), basename(path));
    } catch {
      real = path;
    }
  }
  return `${real}.lock`;
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
