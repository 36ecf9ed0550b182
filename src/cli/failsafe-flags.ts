/**
 * Reading and printing failsafe port lists, for the agent's `--failsafe-*-host-ports` and the
 * simulator's flags of the same names (one reading, so both accept and refuse the same text).
 */
import { FailsafePortsError, parseFailsafePorts, type ProtoPort } from '../dataplane/index.ts';
import { UsageError } from './args.ts';

/** A failsafe port list in Felix's syntax (`tcp:22,udp:68,tcp:10.0.0.0/8:6443`; `none`); a bad one is a usage error naming `flag`. */
export function readFailsafePorts(flag: string): (text: string) => ProtoPort[] {
  return (text) => {
    try {
      return parseFailsafePorts(text);
    } catch (err) {
      if (err instanceof FailsafePortsError) throw new UsageError(`${flag}: ${err.message}`);
      throw err;
    }
  };
}

/** `tcp:22,udp:68`: a list as help texts print it. */
export const formatPorts = (ports: readonly ProtoPort[]): string => ports.map((p) => `${p.protocol}:${p.port}`).join(',');
