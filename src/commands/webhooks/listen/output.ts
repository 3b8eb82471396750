// What `webhooks listen` prints: where it listens (the first line), one line
// per delivery, and the summary when it stops; human lines or, with --json,
// one JSON object a line. Every line passes the run's scrubber besides: a
// sender controls the id, the path and the body it prints from, and could
// echo a secret it learnt. docs/signing.md shows both forms.
import type { IO } from '../../../output/io.js';
import { escapeInline, jsonLineText } from '../../../output/json.js';
import type { HeldSecret } from '../secret-files.js';
import type { DeliveryRecord } from './server.js';

export interface Summary {
  received: number;
  verified: number;
  refused: number;
  forwarded: number;
  forwardFailed: number;
  dropped: number;
}

export class ListenOutput {
  readonly summary: Summary = { received: 0, verified: 0, refused: 0, forwarded: 0, forwardFailed: 0, dropped: 0 };

  constructor(
    private readonly io: IO,
    private readonly json: boolean,
  ) {}

  private line(text: string): void {
    this.io.stdout.write(this.io.scrubber.scrub(text) + '\n');
  }

  /** One JSON line; with --query, what it selects from that line (jsonLineText), nothing for null. */
  private jsonLine(value: unknown): void {
    const text = jsonLineText(this.io, value);
    if (text !== '') this.io.stdout.write(this.io.scrubber.scrub(text));
  }

  listening(url: string, port: number, secrets: readonly HeldSecret[], forwardTo: URL | undefined): void {
    if (this.json) return this.jsonLine({ listening: url, port });
    const held = secrets.map((s) => `${escapeInline(s.file)} (${s.fingerprint})`).join(', ');
    const forward = forwardTo ? `, forwarding verified deliveries to ${escapeInline(forwardTo.href)}` : '';
    this.line(`listening on ${url} (port ${port}), verifying with ${held}${forward}; Ctrl-C stops it`);
  }

  delivery(r: DeliveryRecord): void {
    const s = this.summary;
    s.received++;
    if (r.verified) s.verified++;
    else s.refused++;
    if (r.forward?.status != null) s.forwarded++;
    else if (r.forward) s.forwardFailed++;
    if (this.json) this.jsonLine(r);
    else this.line(describeDelivery(r));
  }

  stopped(dropped: number): void {
    this.summary.dropped = dropped;
    const s = this.summary;
    if (this.json) return this.jsonLine({ summary: s });
    const forwarded = s.forwarded + s.forwardFailed > 0 ? `, ${s.forwarded} forwarded${s.forwardFailed ? `, ${s.forwardFailed} not (502)` : ''}` : '';
    const drops = s.dropped ? `; ${s.dropped} connection${s.dropped === 1 ? '' : 's'} closed at once (over the cap)` : '';
    this.io.stderr.write(`chatctl webhooks listen stopped: ${s.received} received, ${s.verified} verified, ${s.refused} refused${forwarded}${drops}\n`);
  }
}

const skew = (seconds: number) => (seconds >= 0 ? `timestamp ${seconds} s old` : `timestamp ${-seconds} s in the future`);

/** One delivery as a human line: time, status, id, event type, the verdict, the skew, then what changed among the secret files. */
export function describeDelivery(r: DeliveryRecord): string {
  const id = r.webhookId === null ? '-' : escapeInline(r.webhookId);
  const parts = [r.time, String(r.status), id, r.eventType === null ? '-' : escapeInline(r.eventType)];
  const count = r.signatures ?? 0;
  const verdict = r.verified
    ? `verified: ${r.matched.map((m) => `${escapeInline(m.file)} (${m.fingerprint}) signature ${m.signature} of ${count}`).join(', ')}`
    : `refused (${r.reason}): ${escapeInline(r.message ?? '')}`;
  const extra = [
    ...(r.skewSeconds === null ? [] : [skew(r.skewSeconds)]),
    ...(r.forward
      ? [r.forward.status === null ? `forward to ${escapeInline(r.forward.url)} failed: ${escapeInline(r.forward.error ?? '')}` : `forwarded to ${escapeInline(r.forward.url)}: ${r.forward.status}`]
      : []),
    ...r.reloaded.map((f) => `${escapeInline(f.file)} changed: now ${f.fingerprint}`),
    ...r.skipped.map((f) => `${escapeInline(f.file)} skipped: ${escapeInline(f.reason)}`),
  ];
  return `${parts.join(' ')} ${[verdict, ...extra].join('; ')}`;
}
