/**
 * The kind nodes' IPAM plugin (node/files/tessera-ipam.sh) with stub plugins and a stub
 * kubectl: which delegate it calls and with what configuration. The real plugins run it on
 * every kind pod (the kind suite); these cases pin the edges: the gateway when a pod holds
 * its /24's first address, IPv6, no annotation, DEL, and a malformed annotation's error.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('./node/files/tessera-ipam.sh', import.meta.url));
const NETCONF = JSON.stringify({ cniVersion: '0.4.0', name: 'tessera-ptp', ipam: { type: 'tessera-ipam', ranges: [[{ subnet: '10.244.1.0/24' }]] } });

let dir: string;

function stub(name: string, body: string): void {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/bash\n${body}\n`);
  chmodSync(path, 0o755);
}

/** Runs the plugin; the stubs print which plugin ran and the configuration it read. */
function ipam(command: string, annotation: string): { status: number; out: string } {
  try {
    const out = execFileSync('bash', [SCRIPT], {
      input: NETCONF,
      encoding: 'utf8',
      env: {
        PATH: process.env['PATH'] ?? '',
        CNI_COMMAND: command,
        CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=pod1;K8S_POD_INFRA_CONTAINER_ID=abc',
        TESSERA_IPAM_PLUGINS: dir,
        TESSERA_IPAM_KUBECTL: join(dir, 'kubectl'),
        STUB_ANNOTATION: annotation,
      },
    });
    return { status: 0, out };
  } catch (e) {
    const err = e as { status: number; stdout: string };
    return { status: err.status, out: err.stdout };
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tessera-ipam-'));
  stub('kubectl', 'printf "%s" "$STUB_ANNOTATION"');
  stub('static', 'printf "static %s" "$(cat)"');
  stub('host-local', 'printf "host-local %s %s" "$CNI_COMMAND" "$(cat)"');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tessera-ipam (kind nodes: cni.projectcalico.org/ipAddrs on Debian\'s plugins)', () => {
  it('pins an annotated pod\'s IPv4 and IPv6 addresses with the static plugin', () => {
    const { status, out } = ipam('ADD', '["10.66.1.10","fd00:66:1::10"]');
    expect(status).toBe(0);
    expect(out.startsWith('static ')).toBe(true);
    expect(JSON.parse(out.slice('static '.length))).toEqual({
      cniVersion: '0.4.0',
      name: 'tessera-pinned',
      ipam: {
        type: 'static',
        addresses: [
          { address: '10.66.1.10/24', gateway: '10.66.1.1' },
          { address: 'fd00:66:1::10/128', gateway: 'fe80::1' },
        ],
        routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
      },
    });
  });

  it('takes the last address of the /24 as gateway for a pod that holds the first', () => {
    const { out } = ipam('ADD', '["10.66.1.1"]');
    expect(JSON.parse(out.slice('static '.length)).ipam.addresses).toEqual([{ address: '10.66.1.1/24', gateway: '10.66.1.254' }]);
  });

  it('hands a pod without the annotation, and every DEL, to host-local unchanged', () => {
    expect(ipam('ADD', '').out).toBe(`host-local ADD ${NETCONF}`);
    expect(ipam('DEL', '["10.66.1.10"]').out).toBe(`host-local DEL ${NETCONF}`);
  });

  it('refuses a malformed address with a CNI error naming the pod and the annotation', () => {
    const { status, out } = ipam('ADD', '["10.66.1.x"]');
    expect(status).toBe(1);
    const error = JSON.parse(out) as { code: number; msg: string };
    expect(error.code).toBe(999);
    expect(error.msg).toContain('pod ns1/pod1');
    expect(error.msg).toContain('cni.projectcalico.org/ipAddrs');
    expect(error.msg).toContain('10.66.1.x');
  });
});
