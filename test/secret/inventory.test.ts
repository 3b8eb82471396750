// docs/inventory.md: the inventory is a view of the facts, and the facts a
// reactivate or a version conflict adds never change what custody decides
// about a secret.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EndpointFacts, factsPath, noteConflict, noteReactivated, seenOf } from '../../src/secret/facts.js';
import { endpointFacts, knownEndpoints, viewOf } from '../../src/secret/inventory.js';
import { CliError, localError, usageError } from '../../src/errors/cli-error.js';
import { cleanupTempDirs, tempDir } from '../support/run.js';

afterAll(cleanupTempDirs);

const SCOPE = 'org_1/app_1/env_1';
const T = (h: number) => `2030-01-01T${String(h).padStart(2, '0')}:00:00.000Z`;
const run = (configDir: string, h = 9) => ({ configDir, scope: SCOPE, now: () => Date.parse(T(h)) });
const conflict = (details: unknown) => new CliError('webhook_endpoint_version_conflict', 'expectedVersion does not match the current version', 7, { status: 409, details });

describe('facts of answers without a secret', () => {
  it('a reactivate raises the version but supersedes no rotation: the kept secret of version 3 is still the current one', () => {
    const cfg = tempDir('facts');
    const facts = EndpointFacts.read(cfg, SCOPE, 'we_1');
    facts.add({ f: 'applied', at: T(1), key: 'k-3', op: 'rotate', version: 3, fp: 'sha256:aaaa' });
    facts.add({ f: 'kept', at: T(1), key: 'k-3', version: 3, path: '/c/recovered/x.secret' });
    expect(noteReactivated(run(cfg, 2), 'we_1', { endpoint: { id: 'we_1', version: 4, status: 'active' }, changed: true })).toBe(true);
    const read = EndpointFacts.read(cfg, SCOPE, 'we_1');
    expect(read.supersedes('k-3', 3)).toBeUndefined();
    expect(read.lastApplied()).toMatchObject({ key: 'k-3', version: 3 });
    expect(read.lastVersion()).toEqual({ version: 4, at: T(2) });
    // A rotation elsewhere after it does: custody's rule is unchanged.
    read.add({ f: 'applied', at: T(3), key: 'k-5', op: 'rotate', version: 5 });
    expect(EndpointFacts.read(cfg, SCOPE, 'we_1').supersedes('k-3', 3)).toMatchObject({ key: 'k-5' });
  });

  it('a 7 is noted only when it names a current version; other errors pass unnoted', () => {
    const cfg = tempDir('facts');
    expect(noteConflict(run(cfg), 'we_1', conflict({ currentVersion: 6 }), 'rotate')).toBe(true);
    expect(noteConflict(run(cfg), 'we_1', conflict({ endpoint: { version: '7' } }), 'reactivate')).toBe(true);
    expect(noteConflict(run(cfg), 'we_1', conflict({ currentVersion: [8] }), 'rotate')).toBe(false);
    expect(noteConflict(run(cfg), 'we_1', usageError('bad'), 'rotate')).toBe(false);
    expect(noteConflict(run(cfg), 'we_1', localError('interrupted', 'x'), 'rotate')).toBe(false);
    expect(noteConflict(run(cfg), 'we_1', new Error('not ours'), 'rotate')).toBe(false);
    const read = EndpointFacts.read(cfg, SCOPE, 'we_1');
    expect(read.all.map((f) => (f.f === 'seen' ? [f.version, f.via] : f.f))).toEqual([
      [6, 'rotate'],
      [7, 'reactivate'],
    ]);
    // Seen versions never make a secret's record superseded: only applied rotations do.
    expect(read.lastApplied()).toBeUndefined();
    expect(read.lastVersion()).toEqual({ version: 7, at: T(9) });
  });
});

describe('what an answer says of the endpoint', () => {
  it("the sandbox's field names or the short ones; a server's strings cut to a size a fact line can afford", () => {
    const asIs = (t: string) => t;
    expect(seenOf({ name: 'n', destinationUrl: 'https://a', eventTypes: ['e', 7], status: 'active', previousSecretExpiresAt: null }, asIs)).toEqual({
      name: 'n',
      url: 'https://a',
      events: ['e'],
      status: 'active',
      previousSecretExpiresAt: null,
    });
    expect(seenOf({ url: 'https://b', events: ['x'] }, asIs)).toMatchObject({ url: 'https://b', events: ['x'], name: null });
    const huge = seenOf({ name: 'n'.repeat(1e6), destinationUrl: 'u'.repeat(1e6), eventTypes: Array(1e4).fill('e'.repeat(1000)) }, asIs);
    expect(JSON.stringify(huge).length).toBeLessThan(20_000);
  });

  it('server strings pass the scrubber before they are stored: a token or secret echoed in a field is blanked', () => {
    const scrub = (t: string) => t.replaceAll('tok_SECRET', '[REDACTED]').replaceAll('whsec_ECHO', '[REDACTED]');
    expect(seenOf({ name: 'tok_SECRET', destinationUrl: 'https://a/?s=whsec_ECHO', eventTypes: ['whsec_ECHO'], status: 'whsec_ECHO' }, scrub)).toEqual({
      name: '[REDACTED]',
      url: 'https://a/?s=[REDACTED]',
      events: ['[REDACTED]'],
      status: '[REDACTED]',
      previousSecretExpiresAt: null,
    });
  });
});

describe('the view', () => {
  it('the highest version from any fact; name, URL and status from the last answer that described the endpoint; where the last secret went', () => {
    const cfg = tempDir('facts');
    const facts = EndpointFacts.read(cfg, SCOPE, 'we_1');
    const endpoint = (status: string, end: string | null) => ({ name: 'billing', url: 'https://h.example.com/a', events: ['chat.message.created.v1'], status, previousSecretExpiresAt: end });
    facts.add({ f: 'applied', at: T(1), key: 'k-1', op: 'create', version: 1, fp: 'sha256:1111', endpoint: endpoint('active', null) });
    facts.add({ f: 'delivered', at: T(1), key: 'k-1', version: 1, to: [], fp: 'sha256:1111' });
    facts.add({ f: 'applied', at: T(2), key: 'k-2', op: 'rotate', version: 2, mode: 'overlap', fp: 'sha256:2222', endpoint: endpoint('active', T(26)) });
    facts.add({ f: 'kept', at: T(2), key: 'k-2', version: 2, path: '/c/recovered/k2.secret' });
    // An older request replayed later: its lower version decides nothing.
    facts.add({ f: 'applied', at: T(3), key: 'k-1', op: 'create', version: 1, endpoint: endpoint('gone', null) });
    let view = viewOf(EndpointFacts.read(cfg, SCOPE, 'we_1'));
    expect(view).toEqual({
      id: 'we_1',
      scope: SCOPE,
      name: 'billing',
      url: 'https://h.example.com/a',
      events: ['chat.message.created.v1'],
      version: 2,
      status: 'active',
      lastChange: { at: T(2), op: 'rotate', version: 2, mode: 'overlap' },
      fingerprint: 'sha256:2222',
      deliveredTo: [],
      keptAt: '/c/recovered/k2.secret',
      overlapEndsAt: T(26),
    });
    // The kept secret delivered by a re-run; then a 7 names version 4.
    facts.add({ f: 'delivered', at: T(4), key: 'k-2', version: 2, to: ['file:/s/a.whsec', 'exec:vault'], fp: 'sha256:2222' });
    noteConflict(run(cfg, 5), 'we_1', conflict({ currentVersion: 4 }), 'rotate --from');
    view = viewOf(EndpointFacts.read(cfg, SCOPE, 'we_1'));
    expect(view).toMatchObject({ version: 4, lastChange: { at: T(5), op: 'seen', version: 4 }, fingerprint: 'sha256:2222', deliveredTo: ['file:/s/a.whsec', 'exec:vault'], keptAt: null });
  });

  it('a secret given in the --json answer shows as delivered there', () => {
    const cfg = tempDir('facts');
    const facts = EndpointFacts.read(cfg, SCOPE, 'we_1');
    facts.add({ f: 'applied', at: T(1), key: 'k-1', op: 'create', version: 1, fp: 'sha256:1111' });
    facts.add({ f: 'delivered', at: T(1), key: 'k-1', version: 1, to: [], fp: 'sha256:1111' });
    expect(viewOf(EndpointFacts.read(cfg, SCOPE, 'we_1')).deliveredTo).toEqual(['stdout (--json)']);
  });

  it('every endpoint of a scope, by id; a file that names none, or is not a regular file, is passed over', () => {
    const cfg = tempDir('facts');
    EndpointFacts.read(cfg, SCOPE, 'we_b').add({ f: 'applied', at: T(1), key: 'k', op: 'create', version: 1, endpoint: { name: 'bee' } });
    EndpointFacts.read(cfg, SCOPE, 'we_a').add({ f: 'seen', at: T(1), version: 3, via: 'rotate' });
    EndpointFacts.read(cfg, 'org_2/app_1/env_1', 'we_c').add({ f: 'seen', at: T(1), version: 1, via: 'rotate' });
    writeFileSync(join(cfg, 'facts', 'junk.ndjson'), 'not json\n{"f":"seen"}\n');
    mkdirSync(join(cfg, 'facts', 'dir.ndjson'));
    expect(knownEndpoints(cfg, SCOPE)).toEqual([
      { id: 'we_a', name: null },
      { id: 'we_b', name: 'bee' },
    ]);
    expect(endpointFacts(cfg).map((f) => `${f.scope} ${f.endpointId}`)).toEqual([`${SCOPE} we_a`, `${SCOPE} we_b`, `org_2/app_1/env_1 we_c`]);
    expect(knownEndpoints(tempDir('empty'), SCOPE)).toEqual([]);
    expect(factsPath(cfg, SCOPE, 'we_a')).toMatch(/facts\/we_a-[0-9a-f]{16}\.ndjson$/);
  });
});
