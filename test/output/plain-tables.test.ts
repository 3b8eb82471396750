// Tables are boxed on a terminal and plain aligned columns elsewhere (CI
// logs, files, pipes): the renderer, and `profile list` through a pipe.
import { afterAll, describe, expect, it } from 'vitest';
import { renderEndpoint } from '../../src/output/render.js';
import { cleanupTempDirs, runCli, workspace } from '../support/run.js';

afterAll(cleanupTempDirs);
const BOX = /[┌┐└┘│─┼├┤┬┴]/;
const endpoint = { id: 'we_1', name: 'orders', status: 'active', version: 2, eventTypes: ['chat.message.created.v1', 'chat.message.deleted.v1'], extra: { a: 1 } };

describe('tables', () => {
  it('the endpoint: boxed on a terminal, plain otherwise', () => {
    expect(renderEndpoint(endpoint, { color: false, tty: true }, 100)).toMatch(BOX);
    expect(renderEndpoint(endpoint, { color: false, tty: false }, 100)).toBe(
      ['id          we_1', 'name        orders', 'status      active', 'version     2', 'eventTypes  chat.message.created.v1', '            chat.message.deleted.v1', 'extra       {"a":1}', ''].join(
        '\n',
      ),
    );
  });

  it('profile list through a pipe: plain columns, no trailing spaces', async () => {
    const ws = workspace();
    for (const name of ['prod', 'staging-eu']) {
      expect((await runCli(['profile', 'set', name, '--base-url', 'https://api.example.com', '--org', 'o', '--app', 'a', '--env', name], { ws })).exitCode).toBe(0);
    }
    expect((await runCli(['profile', 'use', 'prod'], { ws })).exitCode).toBe(0);
    const r = await runCli(['profile', 'list'], { ws });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).not.toMatch(BOX);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ +PROFILE +BASE URL +ORG +APP +ENV +TOKEN$/);
    expect(lines[1]).toMatch(/^\* +prod +https:\/\/api\.example\.com +o +a +prod +-$/);
    for (const l of lines) expect(l).toBe(l.trimEnd());
  });
});
