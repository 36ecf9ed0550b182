import { describe, expect, it } from 'vitest';
import { VERSION } from './version.ts';

describe('VERSION', () => {
  it('is the semver from package.json', () => {
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });
});
