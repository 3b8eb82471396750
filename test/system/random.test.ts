import { describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from '../../src/system/files.js';

describe('random ids', () => {
  it('are version 4 UUIDs with the RFC variant, and do not repeat', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const id = randomUUID();
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(500);
  });
  it('randomBytes gives the size asked, and different bytes each time', () => {
    expect(randomBytes(32)).toHaveLength(32);
    expect(randomBytes(16).equals(randomBytes(16))).toBe(false);
  });
});
