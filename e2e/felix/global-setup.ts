/** The `felix` project's global setup: builds calico-felix once, before any file runs (warm: instant). */
import { ensureFelix } from './felix-dir.ts';

export default function setup(): void {
  ensureFelix();
}
