/**
 * Which iptables backend to program: the one the node already uses (`auto`), or the one named.
 *
 * Two backends on one host each keep their own ruleset and both see every packet, so an agent
 * writing nft rules on a node whose kube-proxy writes legacy ones runs a second, competing
 * ruleset that neither `iptables-save` shows whole. `auto` follows Felix's rule
 * (`IptablesBackend: Auto`, `environment.DetectBackend` in
 * projectcalico/calico felix/environment/feature_detect_linux.go, itself a copy of
 * kubernetes-sigs/iptables-wrappers' iptables-wrapper-installer.sh):
 *
 * 1. kubelet's canary chain (`KUBE-IPTABLES-HINT` since Kubernetes 1.24, `KUBE-KUBELET-CANARY`
 *    since 1.17; both in the mangle table of the backend kubelet uses) in iptables-nft, IPv4 or
 *    IPv6 → nft;
 * 2. else that chain in iptables-legacy → legacy;
 * 3. else the backend holding more rules (`-A` lines of iptables-save, both families) wins.
 *
 * Where Felix and iptables-wrappers differ, we take iptables-wrappers' side:
 * - a tie — a host without any rule, such as a fresh network namespace — picks nft (Felix picks
 *   legacy: its test "No output from cmds" expects `legacy`). nft is what `iptables` means on
 *   every current distribution (RHEL 8+ ships no legacy at all); a real node never ties, since
 *   kubelet writes its canary chain;
 * - the legacy tables are read with a plain `iptables-legacy-save` (every table that exists),
 *   never `-t mangle`: with legacy, naming a table makes the kernel create it, and looking must
 *   not change the node. Canary chains are matched as chain declarations (`:KUBE-…`), not as
 *   any substring of the output.
 *
 * A read that fails (binary missing, module not loaded, IPv6 disabled) counts as empty output,
 * as in Felix. An explicit `nft`/`legacy` is used as given; the detection still runs so a
 * disagreement can be logged (Felix warns the same way).
 */
import type { CommandRunner } from '../command-runner.ts';

/** `--iptables-backend`: Felix `IptablesBackend` (`Auto`, `NFT`, `Legacy`). */
/**
 * Which iptables implementation to drive. Both write through the same `iptables-restore`
 * language; they must not be mixed on one host (each sees only its own rules).
 */
export type IptablesBackend = 'nft' | 'legacy';

export type IptablesBackendMode = 'auto' | IptablesBackend;

export const IPTABLES_BACKEND_MODES: readonly IptablesBackendMode[] = ['auto', 'nft', 'legacy'];

export const IPTABLES_BACKENDS: readonly IptablesBackend[] = ['nft', 'legacy'];

/** kubelet's chains in the mangle table of the backend it uses (KEP-3178). */
export const KUBELET_CANARY_CHAINS: readonly string[] = ['KUBE-IPTABLES-HINT', 'KUBE-KUBELET-CANARY'];

/** `iptables-nft-save`, `ip6tables-legacy-restore`, …: always the explicit backend binary. */
export function iptablesCommand(backend: IptablesBackend, ipVersion: 4 | 6, op: 'save' | 'restore'): string {
  return `${ipVersion === 4 ? 'iptables' : 'ip6tables'}-${backend}-${op}`;
}

/** What the detection saw. Rule counts are only read when no canary chain decided. */
export interface BackendEvidence {
  /** The canary chain found, and where. */
  readonly canary?: { readonly chain: string; readonly backend: IptablesBackend; readonly ipVersion: 4 | 6 };
  readonly nftRules?: number;
  readonly legacyRules?: number;
}

export interface BackendDetection {
  readonly backend: IptablesBackend;
  /** One sentence for the log. */
  readonly reason: string;
  readonly evidence: BackendEvidence;
}

export interface BackendChoice extends BackendDetection {
  readonly mode: IptablesBackendMode;
  /** What `auto` would have picked (equal to `backend` in auto mode). */
  readonly detected: IptablesBackend;
}

/** The first kubelet canary chain declared in `save` (iptables-save output), if any. */
export function findCanaryChain(save: string): string | undefined {
  for (const line of save.split('\n')) {
    if (!line.startsWith(':KUBE-')) continue;
    const name = line.slice(1, line.indexOf(' ') < 0 ? undefined : line.indexOf(' '));
    if (KUBELET_CANARY_CHAINS.includes(name)) return name;
  }
  return undefined;
}

/** Rules in iptables-save output (Felix `countRulesInIptableOutput`: lines starting with `-`). */
export function countRules(save: string): number {
  let n = 0;
  for (const line of save.split('\n')) if (line.startsWith('-')) n++;
  return n;
}

/** Runs Felix's detection (see the module comment) through `runner`. */
export async function detectIptablesBackend(runner: CommandRunner): Promise<BackendDetection> {
  const read = async (backend: IptablesBackend, ipVersion: 4 | 6, args: readonly string[]): Promise<string> => {
    const r = await runner.run(iptablesCommand(backend, ipVersion, 'save'), args, { timeoutMs: 30_000 });
    return r.code === 0 ? r.stdout : '';
  };
  // nft first, and only its mangle table: the common case costs two cheap reads.
  for (const backend of IPTABLES_BACKENDS) {
    const args = backend === 'nft' ? ['-t', 'mangle'] : [];
    for (const ipVersion of [4, 6] as const) {
      const chain = findCanaryChain(await read(backend, ipVersion, args));
      if (chain === undefined) continue;
      return {
        backend,
        reason: `kubelet's ${chain} chain is in iptables-${backend} (IPv${ipVersion}): the node's Kubernetes components use ${backend}`,
        evidence: { canary: { chain, backend, ipVersion } },
      };
    }
  }
  const [legacy4, legacy6, nft4, nft6] = await Promise.all([read('legacy', 4, []), read('legacy', 6, []), read('nft', 4, []), read('nft', 6, [])]);
  const legacyRules = countRules(legacy4) + countRules(legacy6);
  const nftRules = countRules(nft4) + countRules(nft6);
  const evidence = { legacyRules, nftRules };
  if (legacyRules > nftRules) {
    return { backend: 'legacy', reason: `no kubelet canary chain; iptables-legacy holds more rules (${legacyRules}) than iptables-nft (${nftRules})`, evidence };
  }
  if (nftRules > legacyRules) {
    return { backend: 'nft', reason: `no kubelet canary chain; iptables-nft holds more rules (${nftRules}) than iptables-legacy (${legacyRules})`, evidence };
  }
  return { backend: 'nft', reason: `no kubelet canary chain and both backends hold ${nftRules} rules: nft, the distributions' default`, evidence };
}

/** The backend to program for `mode`, with the detection's verdict alongside. */
export async function resolveIptablesBackend(mode: IptablesBackendMode, runner: CommandRunner): Promise<BackendChoice> {
  if (!IPTABLES_BACKEND_MODES.includes(mode)) throw new RangeError(`resolveIptablesBackend: mode must be auto, nft or legacy, got '${String(mode)}'`);
  const detection = await detectIptablesBackend(runner);
  if (mode === 'auto') return { ...detection, mode, detected: detection.backend };
  return { backend: mode, mode, detected: detection.backend, reason: `set by --iptables-backend ${mode}`, evidence: detection.evidence };
}
