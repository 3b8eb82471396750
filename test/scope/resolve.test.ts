import { describe, expect, it } from 'vitest';
import { checkBaseUrl } from '../../src/http/wire-checks.js';
import { describeScope, resolveConnection, type ScopeDescription } from '../../src/scope/resolve.js';
import { noInput } from '../../src/input/values.js';
import { resolveToken, tokenSourceOf } from '../../src/credentials/source.js';
import { resolveRequestSettings } from '../../src/http/settings.js';
import { selectProfile } from '../../src/config/profile.js';
import type { ConfigData } from '../../src/config/schema.js';
import { CliError } from '../../src/errors/cli-error.js';

const config: ConfigData = {
  currentProfile: 'work',
  profiles: {
    default: { baseUrl: 'https://default.example', organizationId: 'o-def', applicationId: 'a-def', environmentKey: 'e-def' },
    work: {
      baseUrl: 'https://work.example/api/',
      organizationId: 'o-work',
      applicationId: 'a-work',
      environmentKey: 'e-work',
      token: 'stored-token',
      origin: 'https://console.work',
      csrfToken: 'csrf-work',
    },
    other: { baseUrl: 'https://other.example', organizationId: 'o-oth', applicationId: 'a-oth', environmentKey: 'e-oth' },
  },
};

const fails = (fn: () => unknown, exitCode: number) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(exitCode);
    return err as CliError;
  }
  throw new Error('expected a failure');
};

describe('profile selection', () => {
  it.each([
    [{ profile: 'other' }, { CHATCTL_PROFILE: 'default' }, 'other'],
    [{}, { CHATCTL_PROFILE: 'default' }, 'default'],
    [{}, {}, 'work'],
  ])('flags %o env %o → %s', (flags, env, name) => {
    expect(selectProfile(flags, env, config).name).toBe(name);
  });
  it('falls back on "default" with no current profile', () => {
    expect(selectProfile({}, {}, { profiles: config.profiles }).name).toBe('default');
  });
  it('an explicitly named profile must exist', () => {
    const sel = selectProfile({ profile: 'ghost' }, {}, config);
    fails(() => resolveConnection({}, {}, sel), 3);
  });
});

describe('value precedence: flag > environment > profile > default', () => {
  const sel = selectProfile({}, {}, config);
  it('takes the profile when nothing overrides', () => {
    const c = resolveConnection({}, {}, sel);
    expect(c).toEqual({
      baseUrl: 'https://work.example/api',
      origin: 'https://console.work',
      csrfToken: 'csrf-work',
      scope: { organizationId: 'o-work', applicationId: 'a-work', environmentKey: 'e-work' },
    });
  });
  it('environment beats profile, flags beat environment', () => {
    const env = { CHATCTL_BASE_URL: 'https://env.example', CHATCTL_ORG: 'o-env', CHATCTL_APP: 'a-env', CHATCTL_ENV: 'e-env', CHATCTL_ORIGIN: 'https://o.env', CHATCTL_CSRF_TOKEN: 'c-env' };
    expect(resolveConnection({}, env, sel)).toMatchObject({ baseUrl: 'https://env.example', origin: 'https://o.env', csrfToken: 'c-env', scope: { organizationId: 'o-env' } });
    const c = resolveConnection({ baseUrl: 'https://flag.example', org: 'o-flag', app: 'a-flag', env: 'e-flag' }, env, sel);
    expect(c.baseUrl).toBe('https://flag.example');
    expect(c.scope).toEqual({ organizationId: 'o-flag', applicationId: 'a-flag', environmentKey: 'e-flag' });
  });
  it('defaults Origin to the base URL origin and the CSRF value to 1', () => {
    const c = resolveConnection({ baseUrl: 'https://x.example:8443/p', org: 'o', app: 'a', env: 'e' }, {}, selectProfile({}, {}, {}));
    expect(c.origin).toBe('https://x.example:8443');
    expect(c.csrfToken).toBe('1');
  });
  it('names every missing scope value', () => {
    const err = fails(() => resolveConnection({ baseUrl: 'https://x.example' }, {}, selectProfile({}, {}, {})), 3);
    expect(err.message).toContain('--org');
    expect(err.message).toContain('--app');
    expect(err.message).toContain('--env');
  });
  it('no base URL is a config error', () => {
    fails(() => resolveConnection({}, {}, selectProfile({}, {}, {})), 3);
  });
  it('token: CHATCTL_TOKEN beats the stored one; none is none', () => {
    expect(resolveToken({ CHATCTL_TOKEN: 'env-token' }, sel)).toEqual({ token: 'env-token', source: 'env' });
    expect(resolveToken({}, sel)).toEqual({ token: 'stored-token', source: 'file' });
    expect(resolveToken({}, selectProfile({ profile: 'other' }, {}, config))).toBeUndefined();
  });
  it.each([
    [{ CHATCTL_TOKEN: 't' }, { tokenCommand: 'c', tokenStorage: 'keyring', token: 'f' }, 'env'],
    [{}, { tokenCommand: 'c', tokenStorage: 'keyring', token: 'f' }, 'command'],
    [{}, { tokenStorage: 'keyring', token: 'f' }, 'keyring'],
    [{}, { token: 'f' }, 'file'],
    [{ CHATCTL_TOKEN: '' }, { token: 'f' }, 'file'],
    [{}, {}, 'no token'],
  ] as const)('token source order: env %j, profile %j -> %s', (env, profile, source) => {
    const expected = source === 'no token' ? undefined : source;
    expect(tokenSourceOf(env, profile)).toBe(expected);
    // Only CHATCTL_TOKEN and the file token are at hand without running anything.
    expect(resolveToken(env, { name: 'p', explicit: false, source: 'current', profile })?.source).toBe(expected === 'env' || expected === 'file' ? expected : undefined);
  });
  it('retries and timeout: flag, env, default; bad flag is 2, bad env is 3', () => {
    expect(resolveRequestSettings({}, {})).toEqual({ maxRetries: 4, timeoutMs: 30_000, deadlineMs: 300_000 });
    expect(resolveRequestSettings({}, { CHATCTL_MAX_RETRIES: '2', CHATCTL_TIMEOUT: '1.5' })).toEqual({ maxRetries: 2, timeoutMs: 1500, deadlineMs: 300_000 });
    expect(resolveRequestSettings({ maxRetries: '0', timeout: '5' }, { CHATCTL_MAX_RETRIES: '2' })).toEqual({ maxRetries: 0, timeoutMs: 5000, deadlineMs: 300_000 });
    fails(() => resolveRequestSettings({ maxRetries: '-1' }, {}), 2);
    fails(() => resolveRequestSettings({ timeout: '0' }, {}), 2);
    fails(() => resolveRequestSettings({}, { CHATCTL_TIMEOUT: 'soon' }), 3);
  });
  it('--deadline beats CHATCTL_DEADLINE beats 300 s; bad values are usage (flag) or config (env) errors', () => {
    expect(resolveRequestSettings({}, { CHATCTL_DEADLINE: '2' }).deadlineMs).toBe(2000);
    expect(resolveRequestSettings({ deadline: '0.5' }, { CHATCTL_DEADLINE: '2' }).deadlineMs).toBe(500);
    expect(resolveRequestSettings({}, { CHATCTL_DEADLINE: '' }).deadlineMs).toBe(300_000);
    for (const bad of ['0', '-1', 'soon', '1e3', '86401']) {
      fails(() => resolveRequestSettings({ deadline: bad }, {}), 2);
      fails(() => resolveRequestSettings({}, { CHATCTL_DEADLINE: bad }), 3);
    }
  });
  it('no prompts with --no-input, CHATCTL_NO_INPUT or CI', () => {
    expect(noInput({}, {})).toBe(false);
    expect(noInput({ noInput: true }, {})).toBe(true);
    expect(noInput({}, { CHATCTL_NO_INPUT: '1' })).toBe(true);
    expect(noInput({}, { CI: 'true' })).toBe(true);
    expect(noInput({}, { CI: 'false' })).toBe(false);
  });
});

describe('base URL', () => {
  const err = (m: string) => new CliError('config_error', m, 3);
  it.each(['http://localhost:8080', 'http://127.0.0.1', 'http://127.10.20.30:9/x', 'http://[::1]:4000', 'https://api.example.com'])('accepts %s', (u) => {
    expect(() => checkBaseUrl(u, err)).not.toThrow();
  });
  it.each(['http://example.com', 'http://10.0.0.1', 'http://[::2]', 'http://localhost.example.com', 'ftp://x', 'not a url', 'https://u:p@x.example', 'https://x.example/?q=1'])('refuses %s', (u) => {
    expect(() => checkBaseUrl(u, err)).toThrow(CliError);
  });
  it('drops trailing slashes', () => {
    expect(checkBaseUrl('https://x.example/api///', err).href).toBe('https://x.example/api');
  });
});

describe('describeScope: each value and where it comes from', () => {
  const FULL_ENV = {
    CHATCTL_BASE_URL: 'https://env.example',
    CHATCTL_ORG: 'o-env',
    CHATCTL_APP: 'a-env',
    CHATCTL_ENV: 'e-env',
    CHATCTL_ORIGIN: 'https://o.env',
    CHATCTL_CSRF_TOKEN: 'c-env',
    CHATCTL_TOKEN: 'env-token',
  };
  const FLAGS = { baseUrl: 'https://flag.example', org: 'o-flag', app: 'a-flag', env: 'e-flag' };
  type Row = [string, object, NodeJS.ProcessEnv, object, Partial<Record<keyof ScopeDescription, unknown>>];
  it.each<Row>([
    [
      'the current profile, nothing overriding',
      {},
      {},
      config,
      {
        profile: { name: 'work', source: 'current', exists: true },
        baseUrl: { value: 'https://work.example/api/', source: 'profile' },
        organizationId: { value: 'o-work', source: 'profile' },
        origin: { value: 'https://console.work', source: 'profile' },
        csrfToken: { source: 'profile' },
        token: { source: 'file', stored: true },
      },
    ],
    [
      'environment beats the profile; the token from CHATCTL_TOKEN',
      {},
      FULL_ENV,
      config,
      {
        profile: { name: 'work', source: 'current', exists: true },
        baseUrl: { value: 'https://env.example', source: 'env' },
        environmentKey: { value: 'e-env', source: 'env' },
        origin: { value: 'https://o.env', source: 'env' },
        csrfToken: { source: 'env' },
        token: { source: 'env', stored: true },
      },
    ],
    [
      'flags beat the environment (--profile, --base-url, --org, --app, --env)',
      { profile: 'other', ...FLAGS },
      { ...FULL_ENV, CHATCTL_PROFILE: 'default' },
      config,
      {
        profile: { name: 'other', source: 'flag', exists: true },
        baseUrl: { value: 'https://flag.example', source: 'flag' },
        organizationId: { value: 'o-flag', source: 'flag' },
        applicationId: { value: 'a-flag', source: 'flag' },
        environmentKey: { value: 'e-flag', source: 'flag' },
        token: { source: 'env', stored: false },
      },
    ],
    [
      'CHATCTL_PROFILE names the profile; Origin and CSRF value default',
      {},
      { CHATCTL_PROFILE: 'other' },
      config,
      {
        profile: { name: 'other', source: 'env', exists: true },
        baseUrl: { value: 'https://other.example', source: 'profile' },
        origin: { value: 'https://other.example', source: 'default' },
        csrfToken: { source: 'default' },
        token: { source: 'none', stored: false },
      },
    ],
    [
      'no config at all: the "default" profile, which does not exist; nothing set',
      {},
      {},
      {},
      {
        profile: { name: 'default', source: 'default', exists: false },
        baseUrl: { value: null, source: 'none' },
        organizationId: { value: null, source: 'none' },
        origin: { value: null, source: 'none' },
        csrfToken: { source: 'default' },
        token: { source: 'none', stored: false },
      },
    ],
    [
      "--base-url with a stored profile: the flag wins (auth status showed the profile's)",
      { profile: 'other', baseUrl: 'http://127.0.0.1:9' },
      {},
      config,
      {
        baseUrl: { value: 'http://127.0.0.1:9', source: 'flag' },
        origin: { value: 'http://127.0.0.1:9', source: 'default' },
        organizationId: { value: 'o-oth', source: 'profile' },
      },
    ],
    [
      'a profile called "constructor" is absent (not Object.prototype.constructor)',
      { profile: 'constructor' },
      {},
      config,
      { profile: { name: 'constructor', source: 'flag', exists: false }, baseUrl: { value: null, source: 'none' } },
    ],
    [
      'empty values count as unset',
      { baseUrl: '' },
      { CHATCTL_BASE_URL: '', CHATCTL_PROFILE: '' },
      config,
      { profile: { name: 'work', source: 'current', exists: true }, baseUrl: { value: 'https://work.example/api/', source: 'profile' } },
    ],
    [
      'a base URL that is not a URL is still described, with no default Origin',
      { baseUrl: 'not a url' },
      {},
      {},
      { baseUrl: { value: 'not a url', source: 'flag' }, origin: { value: null, source: 'none' } },
    ],
  ])('%s', (_label, flags, env, cfg, expected) => {
    expect(describeScope(flags, env, cfg as typeof config)).toMatchObject(expected);
  });

  it("never carries a credential's value", () => {
    const text = JSON.stringify(describeScope({}, { CHATCTL_TOKEN: 'env-token', CHATCTL_CSRF_TOKEN: 'c-env' }, config));
    for (const secret of ['env-token', 'stored-token', 'c-env', 'csrf-work']) expect(text).not.toContain(secret);
  });

  it('agrees with resolveConnection on every value it resolves', () => {
    const cases: [object, NodeJS.ProcessEnv][] = [
      [{}, {}],
      [{}, FULL_ENV],
      [FLAGS, FULL_ENV],
      [{ profile: 'other' }, { CHATCTL_ORG: 'o-x' }],
    ];
    for (const [flags, env] of cases) {
      const d = describeScope(flags, env, config);
      const c = resolveConnection(flags, env, selectProfile(flags, env, config));
      expect(checkBaseUrl(d.baseUrl.value!, (m) => new Error(m)).href).toBe(c.baseUrl);
      expect([d.organizationId.value, d.applicationId.value, d.environmentKey.value]).toEqual([c.scope.organizationId, c.scope.applicationId, c.scope.environmentKey]);
      expect(d.origin.value).toBe(c.origin);
    }
  });
});
