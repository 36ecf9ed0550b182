import { describe, expect, it } from 'vitest';

import { FakeKernel } from '../dataplane/iptables/fake-kernel.ts';
import { RecordingCommandRunner, type CommandResult, type RecordedCommand } from '../dataplane/index.ts';
import { createRootLogger } from '../runtime/logger.ts';
import { bootstrapNode, type BootstrapOptions } from './bootstrap.ts';

const IP_ADDR = JSON.stringify([
  { ifname: 'eth0', addr_info: [{ family: 'inet', local: '10.0.0.5', prefixlen: 24, scope: 'global' }, { family: 'inet6', local: 'fd00::5', prefixlen: 64, scope: 'global' }] },
]);

/**
 * A node with one fake kernel per iptables backend (IPv4 and IPv6 alike), the IP sets in the
 * nft one, `iptables-*-restore --version` answered, and `ip -j addr` answering `addresses`.
 */
function node(addresses: CommandResult = { code: 0, stdout: IP_ADDR, stderr: '' }) {
  const nft = new FakeKernel();
  const legacy = new FakeKernel();
  const runner = new RecordingCommandRunner((call: RecordedCommand) => {
    if (call.args[0] === '--version') return undefined;
    if (call.cmd === 'ip') return addresses;
    const kernel = /-legacy-/.test(call.cmd) ? legacy : nft;
    return kernel.handler(call);
  });
  return { nft, legacy, runner };
}

function logs() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createRootLogger({ level: 'info', destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
  return { lines, logger, messages: () => lines.map((l) => `${String(l['level'])}: ${String(l['msg'])}`) };
}

function options(runner: RecordingCommandRunner, logger: BootstrapOptions['logger'], more: Partial<BootstrapOptions> = {}): BootstrapOptions {
  return { nodeName: 'n1', runner, iptablesBackend: 'auto', logger, ...more };
}

const MARKER = 'cali-tessera-owner';
const DROP_LOG = { group: 100, rate: '10/second', burst: 5 };

describe('bootstrapNode', () => {
  it('on a fresh node: nft, the ownership mark written there alone, the families of the node\'s global addresses, the drop log kept', async () => {
    const { nft, legacy, runner } = node();
    const { lines, logger, messages } = logs();
    const r = await bootstrapNode(options(runner, logger, { dropLog: DROP_LOG }));
    expect(r).toEqual({ ok: true, setup: { iptablesBackend: 'nft', ipVersions: [4, 6], dropLog: DROP_LOG } });
    expect(nft.chains.has(MARKER)).toBe(true);
    expect(legacy.chains.has(MARKER)).toBe(false);
    // The probe's scratch chain is tried once per family and removed again.
    expect(nft.chains.has('cali-tessera-droplog-probe')).toBe(false);
    expect(runner.calls.filter((c) => /restore$/.test(c.cmd) && c.stdin?.includes('NFLOG')).map((c) => c.cmd)).toEqual(['iptables-nft-restore', 'ip6tables-nft-restore']);
    expect(messages()).toEqual(['info: programming iptables-nft', 'info: programming IPv4 and IPv6']);
    expect(lines[1]).toMatchObject({ nodeName: 'n1', source: 'detected', addresses: ['10.0.0.5/24 eth0', 'fd00::5/64 eth0'], interfacePrefixes: ['cali'] });
  });

  it('refuses a host without a tool before writing anything (cannot-program, one line naming it)', async () => {
    const { runner } = node();
    const inner = runner.handler;
    runner.handler = (c) => (c.cmd === 'ipset' ? { code: 127, stdout: '', stderr: 'spawn ipset ENOENT' } : inner(c));
    const { lines, logger } = logs();
    expect(await bootstrapNode(options(runner, logger, { netns: 'ns1' }))).toEqual({ ok: false, refusal: 'cannot-program' });
    expect(runner.calls.filter((c) => /restore$/.test(c.cmd) && c.args[0] !== '--version')).toEqual([]);
    expect(lines).toEqual([expect.objectContaining({ level: 'error', msg: 'refusing to start: cannot program the dataplane', nodeName: 'n1', netns: 'ns1', iptablesBackend: 'nft', reason: 'ipset is not installed (or not on PATH): install iptables and ipset' })]);
  });

  it("refuses a node whose cali- chains are another dataplane's (foreign-dataplane) and does not mark it", async () => {
    const { nft, runner } = node();
    nft.chains.set('cali-fw-eth0', ['-j ACCEPT']);
    const { lines, logger } = logs();
    expect(await bootstrapNode(options(runner, logger))).toEqual({ ok: false, refusal: 'foreign-dataplane' });
    expect(nft.chains.has(MARKER)).toBe(false);
    expect(lines.at(-1)).toMatchObject({ level: 'error', msg: "refusing to start: this node's cali- chains or IP sets belong to another Calico dataplane (Felix), not Tessera" });
    expect(String(lines.at(-1)?.['reason'])).toMatch(/without Tessera's marker chain .*\. Remove the other dataplane \(or run tessera cleanup --force\) first$/);
  });

  it('a mark that cannot be written is cannot-program', async () => {
    const { nft, runner } = node();
    nft.restoreOutage = true;
    const { lines, logger } = logs();
    expect(await bootstrapNode(options(runner, logger))).toEqual({ ok: false, refusal: 'cannot-program' });
    expect(lines.at(-1)).toMatchObject({ level: 'error', msg: 'refusing to start: cannot program the dataplane', iptablesBackend: 'nft' });
    expect(String(lines.at(-1)?.['reason'])).toMatch(/writing the marker chain cali-tessera-owner failed/);
  });

  it("follows kubelet's canary chain to iptables-legacy; an explicit backend that disagrees is used, with a warning", async () => {
    const auto = node();
    auto.legacy.chains.set('KUBE-KUBELET-CANARY', []);
    const a = logs();
    expect(await bootstrapNode(options(auto.runner, a.logger, { ipVersions: [4] }))).toMatchObject({ ok: true, setup: { iptablesBackend: 'legacy' } });
    expect(auto.legacy.chains.has(MARKER)).toBe(true);
    expect(a.lines[0]).toMatchObject({ msg: 'programming iptables-legacy', mode: 'auto', evidence: { canary: { chain: 'KUBE-KUBELET-CANARY', backend: 'legacy' } } });

    const explicit = node();
    explicit.legacy.chains.set('KUBE-KUBELET-CANARY', []);
    const e = logs();
    expect(await bootstrapNode(options(explicit.runner, e.logger, { iptablesBackend: 'nft', ipVersions: [4] }))).toMatchObject({ ok: true, setup: { iptablesBackend: 'nft' } });
    expect(e.messages().slice(0, 2)).toEqual(['info: programming iptables-nft', "warn: the node's rules are in iptables-legacy: two rulesets will see every packet"]);
    expect(e.lines[1]).toMatchObject({ detected: 'legacy', reason: 'set by --iptables-backend nft' });
  });

  it("warns of Tessera's own rules left in the other backend", async () => {
    const { legacy, runner } = node();
    legacy.chains.set(MARKER, []);
    const { lines, logger } = logs();
    expect(await bootstrapNode(options(runner, logger, { iptablesBackend: 'nft', ipVersions: [4] }))).toMatchObject({ ok: true });
    expect(lines.find((l) => l['level'] === 'warn')).toMatchObject({ stale: 'legacy', msg: "Tessera's rules from an earlier run are still in iptables-legacy; remove them with tessera cleanup --iptables-backend legacy" });
  });

  it('families: the flag is used as given (nothing run); an undetectable node is IPv4 only, with a warning', async () => {
    const given = node();
    const g = logs();
    expect(await bootstrapNode(options(given.runner, g.logger, { ipVersions: [6], interfacePrefixes: ['veth'] }))).toMatchObject({ ok: true, setup: { ipVersions: [6] } });
    expect(given.runner.callsTo('ip')).toEqual([]);
    expect(g.lines.at(-1)).toMatchObject({ msg: 'programming IPv6', source: 'flag', interfacePrefixes: ['veth'] });

    const failing = node({ code: 1, stdout: '', stderr: 'ip: command failed' });
    const f = logs();
    expect(await bootstrapNode(options(failing.runner, f.logger))).toMatchObject({ ok: true, setup: { ipVersions: [4] } });
    expect(f.lines.at(-1)).toMatchObject({ level: 'warn', msg: "programming IPv4 only: could not detect the node's IP families (set --ip-versions)", source: 'fallback' });
  });

  it("runs without the drop log when the kernel refuses its NFLOG rule, and leaves no scratch chain; without one asked, probes nothing", async () => {
    const { nft, runner } = node();
    nft.rejectRules = /NFLOG/;
    const { lines, logger } = logs();
    expect(await bootstrapNode(options(runner, logger, { dropLog: DROP_LOG }))).toEqual({ ok: true, setup: { iptablesBackend: 'nft', ipVersions: [4, 6], dropLog: undefined } });
    expect(nft.chains.has('cali-tessera-droplog-probe')).toBe(false);
    expect(lines.at(-1)).toMatchObject({ level: 'warn', ipVersion: 4, msg: "the kernel or iptables does not take the drop log's NFLOG/hashlimit rule: running without the drop log and the denied-flow log (enforcement is unaffected)" });

    const quiet = node();
    expect(await bootstrapNode(options(quiet.runner, logs().logger))).toMatchObject({ ok: true, setup: { dropLog: undefined } });
    expect(quiet.runner.calls.some((c) => c.stdin?.includes('NFLOG'))).toBe(false);
  });
});
