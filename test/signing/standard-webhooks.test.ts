// The signing module against the Standard Webhooks published test vectors
// (the reference libraries' own tests: JavaScript and Python share them) and,
// in a property test, against the reference package `standardwebhooks` on
// 1,000 generated cases.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { parseHeaders, parseSecret, signatureOf, signedHeaders, verifySignature, type ParsedHeaders } from '../../src/signing/standard-webhooks.js';

// The vectors of the reference libraries' tests (libraries/javascript/src/webhook.test.ts, libraries/python/tests/test_webhooks.py).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  /** Their "invalid signature" case: the last character changed. */
  wrong: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=',
  /** Their multi-signature case's decoys. */
  decoys: ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc='],
};

const key = (secret: string) => {
  const k = parseSecret(secret);
  if (!k.ok) throw new Error(k.problem);
  return k.value;
};

const PLAIN = 'must be Unix seconds: a plain decimal integer (digits only, no sign, no leading zero)';

const headersOf = (h: Record<string, string>): ParsedHeaders => {
  const p = parseHeaders(Object.entries(h));
  if (!p.ok) throw new Error(p.problem);
  return p.value;
};

const vectorHeaders = (signature = VECTOR.signature, timestamp = VECTOR.timestamp) => headersOf({ 'webhook-id': VECTOR.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature });

describe('the published test vectors', () => {
  it('signs the vector to the published signature', () => {
    const h = signedHeaders([key(VECTOR.secret)], VECTOR.id, VECTOR.timestamp, VECTOR.payload);
    expect(h).toEqual({ 'webhook-id': VECTOR.id, 'webhook-timestamp': '1614265330', 'webhook-signature': VECTOR.signature });
    // The body as bytes signs the same as the string.
    expect(signatureOf(key(VECTOR.secret), VECTOR.id, VECTOR.timestamp, Buffer.from(VECTOR.payload))).toBe(VECTOR.signature.slice(3));
  });

  it('verifies it at its own time, and within the tolerance either side', () => {
    for (const skew of [0, 300, -300]) {
      const v = verifySignature(key(VECTOR.secret), vectorHeaders(), VECTOR.payload, VECTOR.timestamp + skew);
      expect(v).toEqual({ ok: true, matched: 1, matches: [{ key: 0, signature: 1 }], skewSeconds: skew });
    }
  });

  it('refuses the invalid signature, a tampered body and another secret', () => {
    const k = key(VECTOR.secret);
    expect(verifySignature(k, vectorHeaders(VECTOR.wrong), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false, reason: 'no_matching_signature' });
    expect(verifySignature(k, vectorHeaders(), VECTOR.payload.replace('2432232314', '2432232315'), VECTOR.timestamp)).toMatchObject({ ok: false, reason: 'no_matching_signature' });
    expect(verifySignature(k, vectorHeaders(), VECTOR.payload + '\n', VECTOR.timestamp)).toMatchObject({ ok: false, reason: 'no_matching_signature' });
    expect(verifySignature(key('whsec_' + Buffer.alloc(32, 1).toString('base64')), vectorHeaders(), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false });
    // The signed timestamp is part of what is signed.
    const moved = headersOf({ 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp + 1), 'webhook-signature': VECTOR.signature });
    expect(verifySignature(k, moved, VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false, reason: 'no_matching_signature' });
  });

  it('refuses a stale or a future timestamp, one second beyond the tolerance, saying which', () => {
    const k = key(VECTOR.secret);
    expect(verifySignature(k, vectorHeaders(), VECTOR.payload, VECTOR.timestamp + 301)).toEqual({
      ok: false,
      reason: 'timestamp_too_old',
      signatureMatched: true,
      matches: [{ key: 0, signature: 1 }],
      skewSeconds: 301,
    });
    expect(verifySignature(k, vectorHeaders(), VECTOR.payload, VECTOR.timestamp - 301)).toEqual({
      ok: false,
      reason: 'timestamp_too_new',
      signatureMatched: true,
      matches: [{ key: 0, signature: 1 }],
      skewSeconds: -301,
    });
    expect(verifySignature(k, vectorHeaders(), VECTOR.payload, VECTOR.timestamp + 3600, 3600)).toMatchObject({ ok: true });
  });

  it('accepts the multi-signature header, the match third, and a match in second place', () => {
    const k = key(VECTOR.secret);
    const multi = [VECTOR.decoys[0], VECTOR.decoys[1], VECTOR.signature, VECTOR.decoys[0]].join(' ');
    expect(verifySignature(k, vectorHeaders(multi), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: true, matched: 3 });
    expect(verifySignature(k, vectorHeaders(`${VECTOR.decoys[0]} ${VECTOR.signature}`), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: true, matched: 2 });
    // A v2 entry holding the right value is not a v1 signature.
    expect(verifySignature(k, vectorHeaders(VECTOR.signature.replace('v1,', 'v2,')), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false });
  });

  it('reads the secret with its whsec_ prefix only, and never quotes it in a problem', () => {
    expect(key(VECTOR.secret)).toEqual(Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64'));
    expect(key(`  ${VECTOR.secret}\n`)).toEqual(key(VECTOR.secret));
    for (const bad of ['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_', 'whsec_not base64!', 'whsec_abcde', 'whsec_ab=c', 'sk_live_abc']) {
      const r = parseSecret(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok && bad.length > 8) expect(r.problem).not.toContain(bad.slice(6));
    }
  });

  it.each([
    [{ 'webhook-timestamp': '1', 'webhook-signature': 'v1,a' }, 'missing header: webhook-id'],
    [{ 'webhook-id': 'm' }, 'missing headers: webhook-timestamp, webhook-signature'],
    [{ 'webhook-id': 'm', 'webhook-timestamp': 'hello', 'webhook-signature': 'v1,a' }, `webhook-timestamp ${PLAIN}`],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '-5', 'webhook-signature': 'v1,a' }, `webhook-timestamp ${PLAIN}`],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '+5', 'webhook-signature': 'v1,a' }, `webhook-timestamp ${PLAIN}`],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '05', 'webhook-signature': 'v1,a' }, `webhook-timestamp ${PLAIN}`],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '5.0', 'webhook-signature': 'v1,a' }, `webhook-timestamp ${PLAIN}`],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '1e3', 'webhook-signature': 'v1,a' }, `webhook-timestamp ${PLAIN}`],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '5\u000b', 'webhook-signature': 'v1,a' }, `webhook-timestamp ${PLAIN}`],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '1', 'webhook-signature': '' }, 'webhook-signature is empty'],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '1', 'webhook-signature': 'v1,' }, 'webhook-signature entry 1 is not of the form v1,<base64>'],
    [{ 'webhook-id': 'm', 'webhook-timestamp': '1', 'webhook-signature': 'v1,a nocomma' }, 'webhook-signature entry 2 is not of the form v1,<base64>'],
    [{ 'webhook-id': 'a b', 'webhook-timestamp': '1', 'webhook-signature': 'v1,a' }, 'webhook-id must be 1 to 256 visible ASCII characters, no spaces'],
  ])('malformed headers %j: %s', (h, problem) => {
    expect(parseHeaders(Object.entries(h))).toMatchObject({ ok: false, problem });
  });

  it('tells missing headers apart from malformed ones (a receiver answers 400 to the first, 401 to the rest)', () => {
    expect(parseHeaders([['webhook-id', 'm']])).toEqual({ ok: false, problem: 'missing headers: webhook-timestamp, webhook-signature', missing: ['webhook-timestamp', 'webhook-signature'] });
    expect(parseHeaders(Object.entries({ 'webhook-id': 'm', 'webhook-timestamp': '05', 'webhook-signature': 'v1,a' }))).not.toHaveProperty('missing');
  });

  it('signs over the timestamp header as received: a signature made for 0<ts> is not one for <ts>, and the reverse', () => {
    const k = key(VECTOR.secret);
    // What the timestamp header says is what was signed, character for character.
    const raw = (ts: string, signature: string) => ({ ...vectorHeaders(signature), timestampText: ts });
    expect(verifySignature(k, raw('01614265330', VECTOR.signature), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false, reason: 'no_matching_signature' });
    const padded = `v1,${signatureOf(k, VECTOR.id, '01614265330', VECTOR.payload)}`;
    expect(verifySignature(k, raw('01614265330', padded), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: true });
    expect(verifySignature(k, vectorHeaders(padded), VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false, reason: 'no_matching_signature' });
    // And the header parser refuses 0<ts> outright: it is not a plain decimal integer.
    expect(parseHeaders(Object.entries({ 'webhook-id': VECTOR.id, 'webhook-timestamp': '01614265330', 'webhook-signature': padded }))).toMatchObject({ ok: false });
  });

  it('checks every key: during an overlap both the old and the new secret verify, each by its own signature', () => {
    const oldKey = key(VECTOR.secret);
    const newKey = Buffer.alloc(32, 9);
    const stranger = Buffer.alloc(32, 3);
    const both = signedHeaders([newKey, oldKey], VECTOR.id, VECTOR.timestamp, VECTOR.payload)['webhook-signature'];
    const h = vectorHeaders(both);
    expect(verifySignature([oldKey, newKey], h, VECTOR.payload, VECTOR.timestamp)).toEqual({
      ok: true,
      matched: 2,
      matches: [
        { key: 0, signature: 2 },
        { key: 1, signature: 1 },
      ],
      skewSeconds: 0,
    });
    expect(verifySignature([stranger, oldKey], h, VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: true, matches: [{ key: 1, signature: 2 }] });
    expect(verifySignature([stranger], h, VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false, matches: [] });
    // After the overlap: the new secret's signature only; the old key alone is refused.
    const single = vectorHeaders(signedHeaders([newKey], VECTOR.id, VECTOR.timestamp, VECTOR.payload)['webhook-signature']);
    expect(verifySignature([oldKey], single, VECTOR.payload, VECTOR.timestamp)).toMatchObject({ ok: false, reason: 'no_matching_signature' });
  });

  it('reads header names in any case, ignores other headers and refuses a repeated one', () => {
    const p = parseHeaders([
      ['Webhook-Id', ' m '],
      ['content-type', 'application/json'],
      ['WEBHOOK-TIMESTAMP', '5'],
      ['webhook-signature', 'v1,a  v1,b'],
    ]);
    expect(p).toEqual({
      ok: true,
      value: {
        id: 'm',
        timestamp: 5,
        timestampText: '5',
        signatures: [
          { version: 'v1', value: 'a' },
          { version: 'v1', value: 'b' },
        ],
      },
    });
    expect(
      parseHeaders([
        ['webhook-id', 'a'],
        ['webhook-id', 'b'],
        ['webhook-timestamp', '1'],
        ['webhook-signature', 'v1,a'],
      ]),
    ).toEqual({ ok: false, problem: 'webhook-id is given more than once' });
  });
});

// ---------------------------------------------------------------- against the reference package

const secretArb = fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => `whsec_${Buffer.from(b).toString('base64')}`);
const idArb = fc.stringMatching(/^[\x21-\x7e]{1,40}$/);
const payloadArb = fc.oneof(fc.json(), fc.string({ unit: 'grapheme', maxLength: 120 }), fc.string({ unit: 'binary-ascii', maxLength: 60 }));
/** Seconds from now: well inside the tolerance, or well beyond it (the clock moves while the case runs). */
const skewArb = fc.oneof(
  { arbitrary: fc.integer({ min: -290, max: 290 }), weight: 4 },
  { arbitrary: fc.integer({ min: 310, max: 10_000_000 }), weight: 1 },
  { arbitrary: fc.integer({ min: -10_000_000, max: -310 }), weight: 1 },
);
type Tamper = 'none' | 'body' | 'secret' | 'id' | 'timestamp';
const caseArb = fc.record({
  secret: secretArb,
  other: secretArb,
  id: idArb,
  payload: payloadArb,
  skew: skewArb,
  decoysBefore: fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { maxLength: 3 }),
  decoysAfter: fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { maxLength: 2 }),
  tamper: fc.oneof({ arbitrary: fc.constant<Tamper>('none'), weight: 4 }, { arbitrary: fc.constantFrom<Tamper>('body', 'secret', 'id', 'timestamp'), weight: 4 }),
});

/** The reference's verdict: it throws WebhookVerificationError to refuse (and may throw parsing a body that is not JSON, after a match). */
function referenceAccepts(secret: string, payload: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(payload, headers);
    return true;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false;
    if (err instanceof SyntaxError) return true;
    throw err;
  }
}

describe('agrees with the standardwebhooks package', () => {
  it('on 1,000 generated cases: the same signature, and the same verdict', () => {
    let accepted = 0;
    fc.assert(
      fc.property(caseArb, (c) => {
        const now = Math.floor(Date.now() / 1000);
        const timestamp = now - c.skew;
        const reference = new Webhook(c.secret);
        const ours = signedHeaders([key(c.secret)], c.id, timestamp, c.payload);
        expect(ours['webhook-signature']).toBe(reference.sign(c.id, new Date(timestamp * 1000), c.payload));

        const decoy = (b: Uint8Array) => `v1,${Buffer.from(b).toString('base64')}`;
        const signature = [...c.decoysBefore.map(decoy), ours['webhook-signature'], ...c.decoysAfter.map(decoy)].join(' ');
        const received = { 'webhook-id': c.tamper === 'id' ? c.id + 'x' : c.id, 'webhook-timestamp': String(c.tamper === 'timestamp' ? timestamp + 1 : timestamp), 'webhook-signature': signature };
        const body = c.tamper === 'body' ? c.payload + ' ' : c.payload;
        const secret = c.tamper === 'secret' ? c.other : c.secret;
        const verdict = verifySignature(key(secret), headersOf(received), body, Math.floor(Date.now() / 1000));
        const expected = referenceAccepts(secret, body, received);
        expect(verdict.ok).toBe(expected);
        if (verdict.ok) {
          accepted++;
          expect(verdict.matched).toBe(c.decoysBefore.length + 1);
        }
      }),
      { numRuns: 1000 },
    );
    // The generator reaches both verdicts, often (about a third of the cases are accepted).
    expect(accepted).toBeGreaterThan(200);
    expect(accepted).toBeLessThan(800);
  });
});
