// Help routing reads the tree from the program itself (src/app/help-routing.ts);
// the argv scan that picks the group to build runs before the program exists
// and keeps its own list (src/app/cli.ts). In-process, no process started.
import { describe, expect, test } from 'vitest';
import { configuredProgram, GLOBALS_WITH_VALUE, optionsWithValue } from '../../src/app/cli.js';
import { fakeContext, fakeIO } from '../support/fakes.js';

describe('help routing', () => {
  test("the global options that take a value, read from the program, are cli.ts's list", () => {
    const program = configuredProgram(fakeContext({ io: fakeIO() }));
    expect(optionsWithValue(program)).toEqual(GLOBALS_WITH_VALUE);
    expect(optionsWithValue(program).has('--json')).toBe(false); // a switch takes none
  });
});
