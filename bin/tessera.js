#!/usr/bin/env node
// Runs the CLI straight from the TypeScript sources through tsx, so `npm ci` is the only
// build step a checkout needs.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/main.ts');
