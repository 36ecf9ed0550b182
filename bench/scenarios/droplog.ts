/**
 * What the denied-flow log costs per denied packet (`npm run bench -- droplog [packets=200000]
 * [rounds=3]`), on real kernels: a sender namespace floods UDP over a veth pair into a node
 * namespace whose INPUT drops it through a deny rule rendered as the agent renders it, in three
 * configurations, interleaved per round:
 * - `off`: the deny rule alone (no drop log);
 * - `limited`: the drop log as the agent ships it (10/second, burst 5, shared bucket) with the
 *   reader running — almost every packet pays only the hashlimit check;
 * - `unlimited`: a limit no flood reaches (1,000,000/second, burst 10,000) — every packet goes
 *   to NFLOG, through tcpdump, and through the reader's parse, attribution and de-duplication
 *   (destination ports cycle over 50,000, so most packets are new flows and give a line);
 * - `kernel-log`: the alternative the denied-flow log was chosen against — the same limit with
 *   a `LOG` target (the kernel log; in a network namespace only with the global sysctl
 *   `net.netfilter.nf_log_all_netns=1`, set for the case and restored), read from `/dev/kmsg`
 *   by this process.
 *
 * Figures: packets the deny rule dropped (kernel counter), machine CPU (all of /proc/stat's busy
 * time: kernel softirq, tcpdump and this process) per dropped packet and its excess over `off`,
 * the reader's own CPU (tcpdump + this process) per logged packet, and lines written.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dropLogPrefix, dropLogTarget } from '../../src/dataplane/drop-log.ts';
import { actionText, matchText } from '../../src/dataplane/iptables/rule-text.ts';
import { DeniedFlowLog } from '../../src/flowlog/index.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { report, type BenchScenario } from '../scenario.ts';

const SENDER = 'tsr-dlb-s';
const NODE = 'tsr-dlb-n';
const SENDER_IP = '10.77.0.1';
const NODE_IP = '10.77.0.2';
const CHAIN = 'cali-bench-deny';
/** The deny rule the log rule precedes (what the prefix's digest covers). */
const DROP = { match: '-p udp', action: '-j DROP', tag: { kind: 'rule', index: 0, action: 'deny' } } as const;

const sh = (args: string[], input?: string): string => execFileSync(args[0]!, args.slice(1), { encoding: 'utf8', ...(input === undefined ? {} : { input }) });
const inNs = (ns: string, args: string[], input?: string): string => sh(['ip', 'netns', 'exec', ns, ...args], input);

function setup(): void {
  teardown();
  sh(['ip', 'netns', 'add', SENDER]);
  sh(['ip', 'netns', 'add', NODE]);
  sh(['ip', 'link', 'add', 'dlb-s', 'netns', SENDER, 'type', 'veth', 'peer', 'name', 'dlb-n', 'netns', NODE]);
  inNs(SENDER, ['ip', 'addr', 'add', `${SENDER_IP}/24`, 'dev', 'dlb-s']);
  inNs(NODE, ['ip', 'addr', 'add', `${NODE_IP}/24`, 'dev', 'dlb-n']);
  for (const [ns, dev] of [[SENDER, 'dlb-s'], [NODE, 'dlb-n']] as const) {
    inNs(ns, ['ip', 'link', 'set', 'lo', 'up']);
    inNs(ns, ['ip', 'link', 'set', dev, 'up']);
  }
}

function teardown(): void {
  for (const ns of [SENDER, NODE]) {
    try {
      sh(['ip', 'netns', 'del', ns]);
    } catch {
      // not there
    }
  }
}

/** The node's INPUT → deny chain, with or without the drop log, counters zeroed. */
type Mode = 'off' | 'limited' | 'unlimited' | 'kernel-log';

function program(mode: Mode): void {
  const rules = [`-A INPUT -p udp -j ${CHAIN}`];
  if (mode === 'kernel-log') {
    const log = dropLogTarget({ rate: '1000000/second', burst: 10_000 })(CHAIN, 1, DROP);
    rules.push(`-A ${CHAIN} -p udp ${matchText(log.match)} -j LOG --log-prefix ${CHAIN}|1 --log-level 5`);
  } else if (mode !== 'off') {
    const log = dropLogTarget(mode === 'limited' ? {} : { rate: '1000000/second', burst: 10_000 })(CHAIN, 1, DROP);
    rules.push(`-A ${CHAIN} -p udp ${matchText(log.match)} ${actionText(log.action)}`);
  }
  rules.push(`-A ${CHAIN} -p udp -j DROP`);
  inNs(NODE, ['iptables-nft-restore'], `*filter\n:INPUT ACCEPT [0:0]\n:${CHAIN} - [0:0]\n-F ${CHAIN}\n${rules.join('\n')}\nCOMMIT\n`);
  inNs(NODE, ['iptables-nft', '-Z']);
}

/** Packets the deny rule dropped and its log rule logged (kernel counters). */
function counted(): { dropped: number; logged: number } {
  const lines = inNs(NODE, ['iptables-nft-save', '-c', '-t', 'filter']).split('\n').filter((l) => l.includes(`-A ${CHAIN}`));
  const count = (line: string | undefined): number => Number(/^\[(\d+):/.exec(line ?? '')?.[1] ?? 0);
  return { dropped: count(lines.find((l) => l.endsWith('-j DROP'))), logged: count(lines.find((l) => l.includes('NFLOG') || l.includes('-j LOG'))) };
}

/** Busy jiffies of the whole machine (everything but idle and iowait). */
function busyJiffies(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return f.reduce((a, b) => a + b, 0) - f[3]! - f[4]!;
}

function procJiffies(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]);
}

const SENDER_JS = `
const dgram = require('node:dgram');
const [n, host] = [Number(process.argv[1]), process.argv[2]];
const s = dgram.createSocket('udp4');
const buf = Buffer.alloc(32);
let i = 0, acked = 0;
const done = () => { if (++acked === n) s.close(); };
function burst() {
  for (let k = 0; k < 512 && i < n; k++, i++) s.send(buf, 10000 + (i % 50000), host, done);
  if (i < n) setImmediate(burst);
}
burst();
`;

async function send(packets: number): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', SENDER, process.execPath, '-e', SENDER_JS, String(packets), NODE_IP], { stdio: 'inherit' });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sender exited ${code}`))));
  });
  return performance.now() - t0;
}

const HZ = 100;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Reads /dev/kmsg from now on, counting the lines our LOG rule wrote. */
function readKmsg(): { lines: () => number; stop: () => void } {
  let lines = 0;
  const child = spawn('sh', ['-c', 'exec cat /dev/kmsg'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let buf = '';
  let skipping = true;
  setTimeout(() => (skipping = false), 300);
  child.stdout.on('data', (b: Buffer) => {
    buf += b.toString('latin1');
    const parts = buf.split('\n');
    buf = parts.pop()!;
    if (!skipping) for (const l of parts) if (l.includes(`${CHAIN}|1`)) lines++;
  });
  return { lines: () => lines, stop: () => child.kill() };
}

async function runCase(mode: Mode, packets: number): Promise<Record<string, number | string>> {
  program(mode);
  let lines = 0;
  const stop = new AbortController();
  let reading: Promise<void> | undefined;
  let log: DeniedFlowLog | undefined;
  let kmsg: ReturnType<typeof readKmsg> | undefined;
  const logAllNetns = readFileSync('/proc/sys/net/netfilter/nf_log_all_netns', 'utf8').trim();
  if (mode === 'kernel-log') {
    sh(['sysctl', '-q', '-w', 'net.netfilter.nf_log_all_netns=1']);
    kmsg = readKmsg();
    await sleep(500);
  } else if (mode !== 'off') {
    log = new DeniedFlowLog({
      nodeName: 'bench',
      resolve: (_v: 4 | 6, prefix: string) => (prefix === dropLogPrefix(CHAIN, 1, DROP) ? { direction: 'ingress' as const, decision: 'rule' as const, tier: 'default', policy: { kind: 'GlobalNetworkPolicy', name: 'bench-deny' }, rule: 0 } : undefined),
      endpoint: () => undefined,
      sink: () => lines++,
      commandPrefix: ['ip', 'netns', 'exec', NODE],
      logger: silentLogger,
    });
    reading = log.run(stop.signal);
    for (let i = 0; i < 50 && log.readerPid === undefined; i++) await sleep(20);
    await sleep(500);
  }
  const readerPid = log?.readerPid ?? (kmsg === undefined ? undefined : undefined);
  const busy0 = busyJiffies();
  const tcpdump0 = readerPid === undefined ? 0 : procJiffies(readerPid);
  const self0 = process.cpuUsage();
  const ms = await send(packets);
  await sleep(300);
  const busy = (busyJiffies() - busy0) / HZ;
  const tcpdump = readerPid === undefined ? 0 : (procJiffies(readerPid) - tcpdump0) / HZ;
  const selfUsage = process.cpuUsage(self0);
  const self = mode === 'off' ? 0 : (selfUsage.user + selfUsage.system) / 1e6;
  stop.abort();
  await reading;
  if (kmsg !== undefined) {
    lines = kmsg.lines();
    kmsg.stop();
    sh(['sysctl', '-q', '-w', `net.netfilter.nf_log_all_netns=${logAllNetns}`]);
  }
  const { dropped: drops, logged } = counted();
  return { mode, sent: packets, dropped: drops, logged, sendMs: Math.round(ms), machineCpuS: busy, machineCpuUsPerDrop: +((busy * 1e6) / drops).toFixed(2), readerCpuS: +(tcpdump + self).toFixed(2), tcpdumpCpuS: tcpdump, lines };
}

const scenario: BenchScenario = {
  description: 'CPU per denied packet of the NFLOG drop log (off / as shipped / every packet logged and read), real kernels and tcpdump',
  includeInDefaultRun: false,
  async run(args) {
    const packets = Number(args[0] ?? 200_000);
    const rounds = Number(args[1] ?? 3);
    setup();
    try {
      for (let r = 1; r <= rounds; r++) {
        const results = [];
        for (const mode of ['off', 'limited', 'unlimited', 'kernel-log'] as const) results.push(await runCase(mode, packets));
        const off = results[0]!;
        for (const res of results) {
          const excess = (Number(res['machineCpuUsPerDrop']) - Number(off['machineCpuUsPerDrop'])).toFixed(2);
          const logged = Number(res['logged']);
          report('droplog', String(res['mode']), { round: r, ...res, excessUsPerDrop: Number(excess), ...(logged > 0 ? { readerCpuUsPerLoggedPacket: +((Number(res['readerCpuS']) * 1e6) / logged).toFixed(2) } : {}) });
        }
      }
    } finally {
      teardown();
    }
  },
};

export default scenario;
