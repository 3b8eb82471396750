// Where each item's secret goes in a `--from` run: the `--secret-to` sinks
// for every item, `{id}` in file paths standing for its endpoint id. A thin
// adapter over the sink module (src/secret/), giving the runner what it
// needs per item.
import { readFileSync } from 'node:fs';
import { usageError } from '../errors/cli-error.js';
import { describeKeepFailure, keepSecret, recoverSecret, type KeptSecret } from '../secret/deliver.js';
import { deliverAll, type DeliverDeps, type DeliveryOutcome } from '../secret/deliver-all.js';
import { fingerprint } from '../secret/fingerprint.js';
import { hasIdPlaceholder, parseSinks, sinksFor, substituteId, type SinkSettings } from '../secret/sinks.js';
import type { ManifestItem } from './manifest.js';

export type { DeliveryOutcome };

export interface ItemSecrets {
  /** The sinks as given, for the summary. */
  readonly targets: readonly string[];
  fingerprint(secret: string | Buffer): string;
  /** This item's destinations, `{id}` replaced, as its result line names them. */
  targetsFor(item: ManifestItem): string[];
  /** Before anything is sent: this item's destinations can work (else a usage error). */
  check(item: ManifestItem): void;
  /** Before anything is sent: a destination without {id} cannot serve `count` items (exec: aside). */
  checkShared(count: number): void;
  /** Every destination in turn; the outcome says which hold the secret. */
  deliver(item: ManifestItem, secret: string): Promise<DeliveryOutcome>;
  /** On resume: does every destination of this item already hold the secret with this fingerprint? */
  holds(item: ManifestItem, fp: string): boolean;
  /** Before delivery: a copy in recovered/ (not fsync'd), so no way the run can end loses the secret (throws if it cannot be written). */
  keep(item: ManifestItem, secret: string): KeptSecret;
  /** Keeps a secret that did not reach every destination; its path (throws, naming the folder and why, if even that fails). */
  recover(item: ManifestItem, secret: string | Buffer): string;
}

export interface PlanInput {
  specs: readonly string[];
  settings: Omit<SinkSettings, 'idPlaceholder'>;
  deliverDeps: Omit<DeliverDeps, 'idPlaceholder'>;
  configDir: string;
  now(): number;
}

export function planItemSecrets(input: PlanInput): ItemSecrets {
  if (input.specs.length === 0)
    throw usageError(
      'rotate --from needs --secret-to: where each new secret goes',
      'e.g. --secret-to file:secrets/{id}.whsec, or --secret-to "exec:store-secret" (it sees CHATCTL_ENDPOINT_ID)',
    );
  const settings: SinkSettings = { ...input.settings, idPlaceholder: true };
  const sinks = parseSinks(input.specs, settings);
  const deps: DeliverDeps = { ...input.deliverDeps, idPlaceholder: true };
  return {
    targets: sinks.map((s) => s.to),
    fingerprint,
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
    deliver: (item, secret) => deliverAll(sinks, { endpointId: item.endpointId, secret }, deps),
    holds(item, fp) {
      // Only a file can be read back; an exec: command's store cannot be asked.
      return sinks.every((given) => {
        const sink = substituteId(given, item.endpointId);
        if (sink.kind !== 'file') return false;
        try {
          return fingerprint(readFileSync(sink.path, 'utf8')) === fp;
        } catch {
          return false;
        }
      });
    },
    keep: (item, secret) => keepSecret(input.configDir, item.endpointId, secret, new Date(input.now()), { durable: false }),
    recover(item, secret) {
      try {
        return recoverSecret(input.configDir, item.endpointId, secret, new Date(input.now()));
      } catch (err) {
        throw new Error(describeKeepFailure(err, input.configDir));
      }
    },
  };
}
