// The last rotation of each endpoint that chatctl saw applied on this
// machine (this config folder), so that an older record of the endpoint is
// never delivered over a newer secret (docs/secrets.md, "Superseded
// records"). One small file per endpoint under <config>/rotations/, written
// when a rotation's 2xx with a new version arrives, before its secret goes
// anywhere; a rotation made elsewhere cannot be seen (the API has no read).
import { lstatSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { makeFolders } from '../config/make-folders.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { endpointStem, filesOfEndpoint, type Left, type RecordedRequest } from './record.js';

export interface Rotation {
  endpointId: string;
  version: number;
  /** When the answer arrived (ISO 8601), as the messages say it. */
  at: string;
  idempotencyKey: string;
}

const markerPath = (configDir: string, scope: string, endpointId: string) => join(configDir, 'rotations', `${endpointStem(scope, endpointId)}.json`);

/**
 * Notes that this rotation was applied: every older record of the endpoint
 * is superseded from now on. Best effort: if the note cannot be written the
 * rotation goes on (its secret matters more), and only the protection of an
 * older record against a later re-run is lost.
 */
export function noteRotation(configDir: string, scope: string, r: Rotation, known = lastRotation(configDir, scope, r.endpointId)): void {
  const path = markerPath(configDir, scope, r.endpointId);
  // Versions only go up: a replay of an older request (its key re-sent) names
  // an older version, and must not make a newer record look superseded.
  if (known && known.version >= r.version && known.idempotencyKey !== r.idempotencyKey) return;
  try {
    makeFolders(join(configDir, 'rotations'), 0o700);
    writeFileAtomic(path, `${JSON.stringify(r)}\n`, { durable: false });
  } catch {
    /* see above */
  }
}

/** The last rotation of the endpoint noted here, with when its note was written (the file system's clock, as a record's). */
export function lastRotation(configDir: string, scope: string, endpointId: string): (Rotation & { writtenMs: number }) | undefined {
  const path = markerPath(configDir, scope, endpointId);
  try {
    const st = lstatSync(path);
    if (!st.isFile()) return undefined;
    const r = JSON.parse(readFileSync(path, 'utf8')) as Rotation;
    if (typeof r.version !== 'number' || typeof r.idempotencyKey !== 'string' || typeof r.at !== 'string') return undefined;
    return { ...r, writtenMs: st.mtimeMs };
  } catch {
    return undefined;
  }
}

/**
 * The rotation that supersedes what an earlier run left of this request, if
 * any: a later rotation of the same endpoint with another key. Later means
 * a higher version than the one the record's answer names, or, where the
 * version is not known (no answer yet, a kept secret), a note written after
 * the file was.
 */
export function supersededBy(configDir: string, req: RecordedRequest, left: Left, leftVersion: number | null): Rotation | undefined {
  if (req.op !== 'rotate' || req.endpointId === null) return undefined;
  const last = lastRotation(configDir, req.scope, req.endpointId);
  if (!last || last.idempotencyKey === req.idempotencyKey) return undefined;
  if (leftVersion !== null) return last.version > leftVersion ? last : undefined;
  let leftMs: number;
  try {
    leftMs = lstatSync(left.path).mtimeMs;
  } catch {
    return undefined;
  }
  return last.writtenMs >= leftMs ? last : undefined;
}

/**
 * Once a newer secret of the endpoint is delivered or kept, what older
 * requests left of it goes: those records can never be delivered. Only
 * files last written before the endpoint's note: a request started since
 * (another process) keeps its record.
 */
export function removeSuperseded(configDir: string, scope: string, endpointId: string, keep: string[]): void {
  // Most rotations leave nothing of older requests: then the note need not be read.
  const others = filesOfEndpoint(configDir, scope, endpointId).filter((path) => !keep.includes(path));
  if (others.length === 0) return;
  const last = lastRotation(configDir, scope, endpointId);
  if (!last) return;
  for (const path of others) {
    try {
      if (lstatSync(path).mtimeMs > last.writtenMs) continue;
      unlinkSync(path);
    } catch {
      /* gone already */
    }
  }
}
