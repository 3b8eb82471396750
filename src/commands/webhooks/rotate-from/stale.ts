// Manifest lines that an earlier run, by its journal, has left behind
// (docs/fleet.md, "Stale lines"): never a silent success.
// - A line for the very rotation an earlier run finished is skipped, and its
//   result names when that run was (doneAt).
// - A line that asks to rotate an endpoint from a version the journal shows
//   it has since left is refused before anything is sent: the server would
//   only answer 7, and a job that keeps re-running an old manifest would
//   never notice.
import { usageError } from '../../../errors/cli-error.js';
import { settledOf, type Prior } from './journal.js';
import type { ManifestItem } from './manifest.js';
import type { ItemResult } from './runner.js';

/** An item's result line as printed: a skipped item also says when the run that did it started. */
export type ItemLine = ItemResult | (Extract<ItemResult, { ok: true }> & { doneAt?: string });

/**
 * For an item the journal's rules would send (journal.ts actFor: not the
 * rotation the journal holds): refused (exit 2) when the journal shows the
 * endpoint rotated, through this journal, to a version above the one the
 * line expects.
 */
export function refuseStale(latest: Prior | undefined, item: Pick<ManifestItem, 'line' | 'endpointId' | 'expectedVersion'>): void {
  // The highest version the journal shows applied, whatever came after it.
  const prior = latest && settledOf(latest);
  if (!prior || prior.version === null) return;
  if (item.expectedVersion >= prior.version) return;
  const when = prior.at !== undefined ? ` by the run of ${prior.at}` : ' by an earlier run';
  throw usageError(
    `manifest line ${item.line}: endpoint ${item.endpointId} is at version ${prior.version} now (the journal shows it rotated from version ${prior.ev} to ${prior.version}${when}), but the line expects version ${item.expectedVersion}`,
    `give that line "expectedVersion":${prior.version}; --next-manifest FILE writes each endpoint's version after a run, for the next one`,
  );
}

/** A skipped item's result line, with the start of the run that finished it when the journal knows it. */
export function withDoneAt(result: ItemResult, priors: ReadonlyMap<string, Prior>): ItemLine {
  if (!result.ok || !result.skipped || result.due === false) return result;
  const p = priors.get(result.endpointId);
  const at = p && (settledOf(p) ?? p).at;
  return at === undefined ? result : { ...result, doneAt: at };
}
