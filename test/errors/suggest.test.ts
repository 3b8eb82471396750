import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance, isOpposite, nearest } from '../../src/errors/explain.js';
import { EVENT_TYPES } from '../../src/api/schemas.js';

describe('did you mean', () => {
  it('measures edits, transpositions counting as one', () => {
    expect(editDistance('overlap', 'overlap')).toBe(0);
    expect(editDistance('overla', 'overlap')).toBe(1);
    expect(editDistance('ovrelap', 'overlap')).toBe(1);
    expect(editDistance('imediate', 'immediate')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
  });
  it('suggests the nearest mode, event type or shell within 2 edits', () => {
    expect(nearest('overla', ['overlap', 'immediate'])).toBe('overlap');
    expect(nearest('Immediate', ['overlap', 'immediate'])).toBe('immediate');
    expect(nearest('chat.mesage.created.v1', EVENT_TYPES)).toBe('chat.message.created.v1');
    expect(nearest('chat.message.create.v1', EVENT_TYPES)).toBe('chat.message.created.v1');
    expect(nearest('fihs', ['bash', 'zsh', 'fish'])).toBe('fish');
  });
  it('suggests the one event type containing what was typed', () => {
    expect(nearest('message.deleted', EVENT_TYPES)).toBe('chat.message.deleted.v1');
    expect(nearest('message', EVENT_TYPES)).toBeUndefined(); // many contain it
  });
  it('suggests nothing when nothing is close or two are equally close', () => {
    expect(nearest('rotate-all', ['overlap', 'immediate'])).toBeUndefined();
    expect(nearest('ash', ['bash', 'cash'])).toBeUndefined(); // a tie neither first letter breaks
    expect(nearest('', ['a'])).toBeUndefined();
    expect(didYouMean('overlpa', ['overlap', 'immediate'])).toBe('did you mean overlap?');
  });
  it('breaks a tie by the first letter: bsh is bash, not zsh', () => {
    expect(nearest('bsh', ['bash', 'zsh', 'fish'])).toBe('bash');
    expect(nearest('zhs', ['bash', 'zsh', 'fish'])).toBe('zsh');
  });
  it('never suggests the opposite action, however close its spelling', () => {
    expect(editDistance('deactivate', 'reactivate')).toBe(1);
    expect(nearest('deactivate', ['create', 'rotate', 'reactivate', 'fingerprint'])).toBeUndefined();
    expect(nearest('logout', ['login', 'status'])).toBeUndefined();
    expect(nearest('unlock', ['lock'])).toBeUndefined();
    expect(nearest('reactivat', ['create', 'rotate', 'reactivate'])).toBe('reactivate'); // a typo of the word itself still is
    expect(isOpposite('Deactivate', 'reactivate')).toBe(true);
    expect(isOpposite('enable', 'disable')).toBe(true);
    expect(isOpposite('rotate', 'create')).toBe(false);
    expect(isOpposite('login', 'login')).toBe(false);
  });
});
