// Where each item's secret goes in a `--from` run: the `--secret-to` sinks
// for every item, `{id}` in file paths standing for its endpoint id. A thin
// adapter over the sink module (src/secret/), giving the runner what it
// needs per item.
import { usageError } from '../../../errors/cli-error.js';
import { deliverAll, type DeliverDeps, hasIdPlaceholder, parseSinks, sinkHolds, type SinkSettings, sinksFor, substituteId } from '../../../secret/deliver.js';
import type { ItemSecretsPort } from './runner.js';
import type { ManifestItem } from './manifest.js';

export interface ItemSecrets extends ItemSecretsPort {
  /** The sinks as given, for the summary. */
  readonly targets: readonly string[];
  /** Before anything is sent: this item's destinations can work (else a usage error). */
  check(item: ManifestItem): void;
  /** Before anything is sent: a destination without {id} cannot serve `count` items (exec: aside). */
  checkShared(count: number): void;
  /**
   * Before anything is sent, for every item of the manifest: no destination
   * of this item is one another item's `{id}` also leads to (ids made safe
   * for a GitHub name, or two patterns meeting); the later value would
   * replace the earlier one, and that item would end 0 without its secret.
   */
  claim(item: ManifestItem): void;
  /**
   * Before anything is sent, for an item an earlier run finished (skipped
   * now): every destination named now holds its secret, else a usage error.
   * Its secret is not kept anywhere any more, so a destination it did not
   * go to (another path, or stdout and the GitHub runner's files, which
   * belong to one run) would stay without it while the run ends 0.
   */
  checkDone(item: ManifestItem, prior: { fp: string | null; delivery: readonly { to: string }[] | null }): void;
}

export interface PlanInput {
  specs: readonly string[];
  settings: Omit<SinkSettings, 'idPlaceholder'>;
  deliverDeps: Omit<DeliverDeps, 'idPlaceholder'>;
}

export function planItemSecrets(input: PlanInput): ItemSecrets {
  if (input.specs.length === 0)
    throw usageError('rotate --from needs --secret-to: where each new secret goes', 'e.g. --secret-to file:secrets/{id}.whsec, or --secret-to "exec:store-secret" (it sees CHATCTL_ENDPOINT_ID)');
  const settings: SinkSettings = { ...input.settings, idPlaceholder: true };
  const sinks = parseSinks(input.specs, settings);
  // Other items' answers arrive while one is delivered: its files fsync off the event loop.
  const deps: DeliverDeps = { ...input.deliverDeps, idPlaceholder: true, offLoop: true };
  /** Each concrete destination an item's {id} led to, and that item's endpoint id. */
  const claimed = new Map<string, string>();
  return {
    targets: sinks.map((s) => s.to),
    targetsFor: (item) => sinks.map((s) => substituteId(s, item.endpointId).to),
    check: (item) => void sinksFor(sinks, item.endpointId, settings),
    checkShared(count) {
      if (count <= 1) return;
      for (const sink of sinks) {
        if (sink.kind !== 'exec' && !hasIdPlaceholder(sink))
          throw usageError(
            `--secret-to ${sink.to}: one destination for ${count} endpoints`,
            'put {id} in the path or name, which stands for each endpoint id (e.g. file:secrets/{id}.whsec, github-output:SECRET_{id}), or use exec:, which sees CHATCTL_ENDPOINT_ID',
          );
      }
    },
    claim(item) {
      for (const given of sinks) {
        if (!hasIdPlaceholder(given)) continue; // one destination for many items is refused by checkShared
        let sink;
        try {
          sink = substituteId(given, item.endpointId);
        } catch {
          continue; // an id that cannot stand for {id}: refused by check() when it is sent
        }
        // Keyed as parseSinks keys one item's destinations: a path is one place whatever the variable in it.
        const place = sink.kind === 'github' ? `github:${sink.path}\0${sink.name}` : sink.kind === 'file' || sink.kind === 'env-file' ? `path:${sink.path}` : undefined;
        if (place === undefined) continue;
        const other = claimed.get(place);
        if (other !== undefined && other !== item.endpointId)
          throw usageError(
            `manifest line ${item.line}: endpoints ${JSON.stringify(other)} and ${JSON.stringify(item.endpointId)} would both be delivered to ${sink.to} (--secret-to ${given.to}); the second secret would replace the first`,
            'use a destination whose {id} keeps the ids apart, or exec:, which sees CHATCTL_ENDPOINT_ID',
          );
        claimed.set(place, item.endpointId);
      }
    },
    checkDone(item, prior) {
      const went = new Set((prior.delivery ?? []).map((d) => d.to));
      const missing: string[] = [];
      for (const given of sinks) {
        const sink = substituteId(given, item.endpointId);
        const perRun = sink.kind === 'stdout' || sink.kind === 'github';
        if (perRun || !(went.has(sink.to) || (prior.fp !== null && sinkHolds(sink, prior.fp)))) missing.push(sink.to);
      }
      if (missing.length === 0) return;
      throw usageError(
        `manifest line ${item.line}: endpoint ${item.endpointId} was rotated by an earlier run with this journal and its secret delivered to ${[...went].join(', ') || 'its destinations then'}; it is not kept to deliver to ${missing.join(', ')} now`,
        'give the --secret-to of that run (stdout and github-output:/github-env: hold it for that run only), or take it from where it went; a manifest with the next expectedVersion rotates it again',
      );
    },
    deliver: (item, secret, opts) => deliverAll(sinks, { endpointId: item.endpointId, secret }, { ...deps, skipHeld: opts?.skipHeld }),
    holds: (item, fp) => sinks.every((given) => sinkHolds(substituteId(given, item.endpointId), fp)),
  };
}
