// The answers a prompt accepts: what the server would accept, so that a bad
// one is asked again at the prompt instead of being refused after a request.
import { describe, expect, it } from 'vitest';
import { promptedNameIssue, promptedUrlIssue } from '../../src/prompts/inquirer.js';

describe('prompt answers', () => {
  it('destination URL: https, or http on loopback only; absolute; no credentials; at most 2048 characters', () => {
    expect(promptedUrlIssue('https://hooks.example.com/in')).toBe(true);
    expect(promptedUrlIssue('http://x')).toMatch(/must use https:\/\//);
    expect(promptedUrlIssue('http://hooks.example.com/in')).toMatch(/must use https:\/\//);
    for (const local of ['http://localhost:8080/in', 'http://127.0.0.1/in', 'http://127.1.2.3/in', 'http://[::1]:9/in']) expect(promptedUrlIssue(local), local).toBe(true);
    expect(promptedUrlIssue('ftp://hooks.example.com/x')).toBe('must be an absolute http:// or https:// URL');
    expect(promptedUrlIssue('hooks.example.com/in')).toBe('must be an absolute http:// or https:// URL');
    expect(promptedUrlIssue('https://user:pw@hooks.example.com/in')).toBe('must not contain a user name or password');
    expect(promptedUrlIssue(`https://hooks.example.com/${'a'.repeat(2048)}`)).toBe('must be at most 2048 characters');
  });

  it('name: 1 to 80 characters, counted as the server counts them (code points)', () => {
    expect(promptedNameIssue('billing')).toBe(true);
    expect(promptedNameIssue('')).toBe('must not be empty');
    expect(promptedNameIssue('x'.repeat(80))).toBe(true);
    expect(promptedNameIssue('x'.repeat(81))).toBe('must be at most 80 characters');
    expect(promptedNameIssue('\u{1F600}'.repeat(80))).toBe(true); // 160 UTF-16 units, 80 characters
  });
});
