/**
 * The projectcalico.org/v3 CRDs in crds/, checked without an apiserver:
 * - they are what crds/generate.ts produces, and have the names, scopes and columns we document;
 * - their schemas are structural, so the apiserver can prune and validate with them;
 * - every example and fixture that must be accepted validates against them, and the invalid
 *   fixtures fail at the expected field (ajv over the CRD schemas, with the apiserver's reading
 *   of unknown fields under strict field validation and of `set` lists).
 *
 * CEL rules are not evaluated here. crds/testdata/invalid-cel/ holds objects that only a CEL
 * rule rejects. The integration test e2e/integration/crd-fixtures.int.test.ts applies every
 * fixture and example to a real kube-apiserver (--dry-run=server), CEL rules included.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { buildChannelCrds, buildCrds, renderCrd } from '../crds/generate.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const crdDir = join(root, 'crds');
const examplesDir = join(root, 'examples');
const testdataDir = join(crdDir, 'testdata');

type Obj = { [key: string]: unknown };
type Schema = Obj;

interface LoadedDoc {
  file: string;
  obj: Obj;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asObj(v: unknown, what: string): Obj {
  if (!isObj(v)) throw new TypeError(`${what} is not an object`);
  return v;
}

function loadYaml(file: string): LoadedDoc[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  const out: LoadedDoc[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    out.push({ file, obj: asObj(value, file) });
  }
  return out;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(dir, f));
}

const crdFiles = [...yamlFiles(crdDir), ...yamlFiles(join(crdDir, 'experimental'))];
/** The projectcalico.org/v3 CRDs (ClusterNetworkPolicy's are checked in cluster-network-policy-crds.unit.test.ts). */
const crds = crdFiles
  .map((f) => {
    const docs = loadYaml(f);
    expect(docs).toHaveLength(1);
    return docs[0]!.obj;
  })
  .filter((crd) => crdSpec(crd).group === 'projectcalico.org');

function crdSpec(crd: Obj): Obj {
  return asObj(crd.spec, 'crd.spec');
}
function crdNames(crd: Obj): Obj {
  return asObj(crdSpec(crd).names, 'crd.spec.names');
}
function crdVersion(crd: Obj): Obj {
  const versions = crdSpec(crd).versions as unknown[];
  expect(versions).toHaveLength(1);
  return asObj(versions[0], 'version');
}
function rootSchema(crd: Obj): Schema {
  return asObj(asObj(crdVersion(crd).schema, 'schema').openAPIV3Schema, 'openAPIV3Schema');
}
function crdForKind(kind: string): Obj {
  const crd = crds.find((c) => crdNames(c).kind === kind);
  if (crd === undefined) throw new Error(`no CRD for kind ${kind}`);
  return crd;
}
/** Follows `properties` (and `items` for "[]") from the root schema. */
function schemaAt(kind: string, path: string): Schema {
  let s: Schema = rootSchema(crdForKind(kind));
  for (const part of path.split('.')) {
    s = part === '[]' ? asObj(s.items, `${path} items`) : asObj(asObj(s.properties, `${path} properties`)[part], `${kind} ${path}`);
  }
  return s;
}

// ----- the apiserver's schema semantics, through ajv ------------------------------------------

interface SchemaError {
  path: string;
  message: string;
}

/**
 * A CRD schema node as the JSON Schema ajv checks, with the apiserver's readings of the
 * Kubernetes extensions our schemas use: an object with declared properties rejects unknown
 * fields (kubectl's strict field validation) unless it preserves them, and a `set` list has
 * no duplicates. int-or-string needs nothing: its `anyOf` is plain JSON Schema, and JSON
 * Schema applies `minimum`/`maximum` to numbers and `pattern`/`maxLength` to strings only.
 */
function asJsonSchema(node: Schema): Schema {
  const out: Schema = { ...node };
  if (isObj(node.properties)) {
    out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, asJsonSchema(asObj(v, k))]));
    if (node['x-kubernetes-preserve-unknown-fields'] !== true) out.additionalProperties = false;
  }
  if (isObj(node.items)) out.items = asJsonSchema(node.items);
  if (isObj(node.additionalProperties)) out.additionalProperties = asJsonSchema(node.additionalProperties);
  if (node['x-kubernetes-list-type'] === 'set') out.uniqueItems = true;
  return out;
}

// strictTypes off: an int-or-string node is typeless on purpose (its facets apply per type).
// Formats are not checked: the apiserver checks few, and the old checker checked none.
const ajv = new Ajv({ allErrors: true, validateFormats: false, strictTypes: false });
ajv.addVocabulary([
  'x-kubernetes-int-or-string',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-validations',
]);
const compiled = new WeakMap<Schema, ValidateFunction>();

/** ajv's JSON pointer `/spec/ingress/0/action` as the field path users see: `spec.ingress[0].action`. */
function fieldPathOf(pointer: string, child?: string): string {
  const parts = pointer === '' ? [] : pointer.slice(1).split('/').map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (child !== undefined) parts.push(child);
  let path = '';
  for (const part of parts) path = /^[0-9]+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`;
  return path;
}

/** Every error ajv finds in `value` against the CRD schema node `schema`. */
function validate(schema: Schema, value: unknown): SchemaError[] {
  let check = compiled.get(schema);
  if (check === undefined) {
    check = ajv.compile(asJsonSchema(schema));
    compiled.set(schema, check);
  }
  if (check(value)) return [];
  return (check.errors ?? []).map((e: ErrorObject) => {
    const child =
      e.keyword === 'required' ? String(e.params.missingProperty) : e.keyword === 'additionalProperties' ? String(e.params.additionalProperty) : undefined;
    return { path: fieldPathOf(e.instancePath, child), message: e.message ?? e.keyword };
  });
}

function validateObject(obj: Obj): SchemaError[] {
  const crd = crdForKind(String(obj.kind));
  const errors = validate(rootSchema(crd), obj);
  const namespaced = crdSpec(crd).scope === 'Namespaced';
  const namespace = asObj(obj.metadata, 'metadata').namespace;
  if (namespaced !== (typeof namespace === 'string')) {
    errors.push({ path: 'metadata.namespace', message: namespaced ? 'required for a namespaced kind' : 'not allowed on a cluster kind' });
  }
  return errors;
}

function expectedHeader(file: string): string {
  const m = /^# expect: (.*)$/m.exec(readFileSync(file, 'utf8'));
  if (m?.[1] === undefined) throw new Error(`${file}: no "# expect:" header`);
  return m[1];
}

// ----- structural-schema walk --------------------------------------------------------------

interface Node {
  path: string;
  schema: Schema;
}

function walk(schema: Schema, path: string, out: Node[] = []): Node[] {
  out.push({ path, schema });
  if (isObj(schema.properties)) {
    for (const [k, v] of Object.entries(schema.properties)) walk(asObj(v, k), `${path}.${k}`, out);
  }
  if (isObj(schema.items)) walk(schema.items, `${path}[]`, out);
  if (isObj(schema.additionalProperties)) walk(schema.additionalProperties, `${path}{}`, out);
  return out;
}

const EXPECTED = [
  { kind: 'NetworkPolicy', plural: 'networkpolicies', scope: 'Namespaced', shortNames: ['cnp', 'caliconetworkpolicy'] },
  { kind: 'GlobalNetworkPolicy', plural: 'globalnetworkpolicies', scope: 'Cluster', shortNames: ['gnp', 'cgnp'] },
  { kind: 'Tier', plural: 'tiers', scope: 'Cluster', shortNames: undefined },
  { kind: 'Profile', plural: 'profiles', scope: 'Cluster', shortNames: ['pro'] },
  { kind: 'WorkloadEndpoint', plural: 'workloadendpoints', scope: 'Namespaced', shortNames: ['wep'] },
  { kind: 'HostEndpoint', plural: 'hostendpoints', scope: 'Cluster', shortNames: ['hep', 'heps'] },
];

describe('CRD files', () => {
  it('are exactly what crds/generate.ts renders', () => {
    const generated = [...buildCrds(), ...buildChannelCrds()];
    expect(crdFiles.map((f) => f.slice(crdDir.length + 1)).sort()).toEqual(generated.map((c) => c.file).sort());
    for (const c of generated) {
      expect(readFileSync(join(crdDir, c.file), 'utf8'), `${c.file} is stale: run npx tsx crds/generate.ts`).toBe(renderCrd(c));
    }
  });

  it.each(EXPECTED)('define $kind in projectcalico.org/v3 with its names and scope', (e) => {
    const crd = crdForKind(e.kind);
    expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect(asObj(crd.metadata, 'metadata').name).toBe(`${e.plural}.projectcalico.org`);
    expect(crdSpec(crd).group).toBe('projectcalico.org');
    expect(crdSpec(crd).scope).toBe(e.scope);
    expect(crdNames(crd)).toEqual({
      kind: e.kind,
      listKind: `${e.kind}List`,
      plural: e.plural,
      singular: e.kind.toLowerCase(),
      ...(e.shortNames ? { shortNames: e.shortNames } : {}),
    });
    const v = crdVersion(crd);
    expect([v.name, v.served, v.storage]).toEqual(['v3', true, true]);
    expect(v.subresources).toBeUndefined();
  });

  it('never claim the short names Kubernetes NetworkPolicy uses', () => {
    const all = crds.flatMap((c) => (crdNames(c).shortNames as string[] | undefined) ?? []);
    expect(all).not.toContain('netpol');
    expect(all).not.toContain('np');
  });

  const columns = (kind: string): string[] =>
    (crdVersion(crdForKind(kind)).additionalPrinterColumns as Obj[]).map((c) => `${String(c.name)}=${String(c.jsonPath)}:${String(c.type)}`);

  it('print tier, order and selector for policies', () => {
    for (const kind of ['NetworkPolicy', 'GlobalNetworkPolicy']) {
      expect(columns(kind)).toEqual([
        'Tier=.spec.tier:string',
        'Order=.spec.order:number',
        'Selector=.spec.selector:string',
        'Age=.metadata.creationTimestamp:date',
      ]);
    }
  });

  it('print order and default action for tiers, and node and pod for endpoints', () => {
    expect(columns('Tier')).toEqual([
      'Order=.spec.order:number',
      'DefaultAction=.spec.defaultAction:string',
      'Age=.metadata.creationTimestamp:date',
    ]);
    expect(columns('WorkloadEndpoint').slice(0, 2)).toEqual(['Node=.spec.node:string', 'Pod=.spec.pod:string']);
    // Calico's columns for host endpoints.
    expect(columns('HostEndpoint')).toEqual(['Node=.spec.node:string', 'Interface=.spec.interfaceName:string', 'Age=.metadata.creationTimestamp:date']);
  });

  it('let clients select policies by tier and endpoints by node', () => {
    const selectable = (kind: string): unknown => crdVersion(crdForKind(kind)).selectableFields;
    expect(selectable('NetworkPolicy')).toEqual([{ jsonPath: '.spec.tier' }]);
    expect(selectable('GlobalNetworkPolicy')).toEqual([{ jsonPath: '.spec.tier' }]);
    expect(selectable('WorkloadEndpoint')).toEqual([{ jsonPath: '.spec.node' }]);
  });
});

describe('CRD schemas', () => {
  const nodes = crds.flatMap((crd) => walk(rootSchema(crd), String(crdNames(crd).kind)));

  it('are structural: every node has a type, or is int-or-string', () => {
    const untyped = nodes.filter((n) => n.schema.type === undefined && n.schema['x-kubernetes-int-or-string'] !== true);
    expect(untyped.map((n) => n.path)).toEqual([]);
  });

  it('are structural: int-or-string nodes have no type and only the integer|string anyOf', () => {
    for (const n of nodes.filter((x) => x.schema['x-kubernetes-int-or-string'] === true)) {
      expect(n.schema.type, n.path).toBeUndefined();
      expect(n.schema.anyOf, n.path).toEqual([{ type: 'integer' }, { type: 'string' }]);
    }
    const junctors = nodes.filter(
      (n) => n.schema['x-kubernetes-int-or-string'] !== true && ['anyOf', 'allOf', 'oneOf', 'not'].some((k) => k in n.schema),
    );
    expect(junctors.map((n) => n.path)).toEqual([]);
  });

  it('are structural: no node has both properties and additionalProperties', () => {
    const both = nodes.filter((n) => 'properties' in n.schema && 'additionalProperties' in n.schema);
    expect(both.map((n) => n.path)).toEqual([]);
  });

  it('describe every field, for kubectl explain', () => {
    const bare = nodes.filter(
      (n) =>
        n.schema.description === undefined &&
        !/\.metadata$/.test(n.path) &&
        !n.path.endsWith('[]') &&
        !n.path.endsWith('{}'),
    );
    expect(bare.map((n) => n.path)).toEqual([]);
  });

  it('have defaults that their own schema accepts', () => {
    for (const n of nodes.filter((x) => 'default' in x.schema)) {
      expect(validate(n.schema, n.schema.default), n.path).toEqual([]);
    }
  });

  it('have CEL rules with messages, and fieldPaths that name a declared property', () => {
    for (const n of nodes) {
      for (const v of (n.schema['x-kubernetes-validations'] as Obj[] | undefined) ?? []) {
        expect(typeof v.rule, n.path).toBe('string');
        expect(typeof v.message, n.path).toBe('string');
        if (v.fieldPath !== undefined) {
          // The apiserver rejects a fieldPath into metadata (it has no declared properties).
          let s: Schema = n.schema;
          for (const part of String(v.fieldPath).split('.').slice(1)) s = asObj(asObj(s.properties, n.path)[part], `${n.path} ${String(v.fieldPath)}`);
        }
      }
    }
  });

  it('restrict the enumerated fields to Calico values', () => {
    for (const kind of ['NetworkPolicy', 'GlobalNetworkPolicy', 'Profile']) {
      for (const dir of ['ingress', 'egress']) {
        expect(schemaAt(kind, `spec.${dir}.[].action`).enum).toEqual(['Allow', 'Deny', 'Log', 'Pass']);
        expect(schemaAt(kind, `spec.${dir}.[]`).required).toEqual(['action']);
        expect(schemaAt(kind, `spec.${dir}.[].ipVersion`).enum).toEqual([4, 6]);
      }
    }
    for (const kind of ['NetworkPolicy', 'GlobalNetworkPolicy']) {
      expect(schemaAt(kind, 'spec.types.[]').enum).toEqual(['Ingress', 'Egress']);
      expect(schemaAt(kind, 'spec.performanceHints.[]').enum).toEqual(['AssumeNeededOnEveryNode']);
      expect(rootSchema(crdForKind(kind)).required).toEqual(['spec']);
    }
    expect(schemaAt('Tier', 'spec.defaultAction').enum).toEqual(['Deny', 'Pass']);
    expect(schemaAt('Tier', 'spec.order').type).toBe('number');
    expect(schemaAt('NetworkPolicy', 'spec.order').type).toBe('number');
    expect(schemaAt('WorkloadEndpoint', 'spec.ports.[]').required).toEqual(['port', 'protocol']);
  });

  it('share one Rule schema between every policy and profile direction', () => {
    const ruleSchemas = ['NetworkPolicy', 'GlobalNetworkPolicy', 'Profile'].flatMap((kind) =>
      ['ingress', 'egress'].map((dir) => schemaAt(kind, `spec.${dir}.[]`)),
    );
    for (const s of ruleSchemas) expect(s).toEqual(ruleSchemas[0]);
  });

  it('accept ports as numbers, ranges and names, and reject what Calico rejects', () => {
    const port = schemaAt('NetworkPolicy', 'spec.ingress.[].destination.ports.[]');
    const ok = (v: unknown): boolean => validate(port, v).length === 0;
    for (const v of [1, 65535, '80', '080', '1:65535', '8080:8081', 'http', 'http-api', '9-http', 'a1']) expect(ok(v), String(v)).toBe(true);
    // Names are Kubernetes port names (Calico's portName check): no '_', '.', upper case, edge or double '-', and a letter.
    // (The 15-character limit is src/api validation's: the pattern cannot also count.)
    const notNames = ['web_1.x', '80-90', 'HTTP', '-http', 'http-', 'a--b'];
    for (const v of [0, 65536, -1, '0', '65536', '1:2:3', ':80', '80:', 'a b', 'x'.repeat(129), 1.5, true, ...notNames]) {
      expect(ok(v), String(v)).toBe(false);
    }
  });

  it('accept protocols by exact name or number 1-255', () => {
    const proto = schemaAt('GlobalNetworkPolicy', 'spec.egress.[].protocol');
    const ok = (v: unknown): boolean => validate(proto, v).length === 0;
    for (const v of ['TCP', 'UDP', 'ICMP', 'ICMPv6', 'SCTP', 'UDPLite', 1, 255, '6', '132']) expect(ok(v), String(v)).toBe(true);
    for (const v of ['tcp', 'Tcp', 'icmpv6', 'GRE', 0, 256, '0', '256', '']) expect(ok(v), String(v)).toBe(false);
  });
});

const exampleDocs = yamlFiles(examplesDir).flatMap(loadYaml);
const k8sDocs = yamlFiles(join(examplesDir, 'k8s')).flatMap(loadYaml);

describe('examples', () => {
  it('start with a comment saying what they show', () => {
    for (const f of [...yamlFiles(examplesDir), ...yamlFiles(join(examplesDir, 'k8s'))]) {
      expect(readFileSync(f, 'utf8').startsWith('# '), f).toBe(true);
    }
  });

  it('cover every Calico kind Tessera reads', () => {
    expect(new Set(exampleDocs.map((d) => d.obj.kind))).toEqual(
      new Set(['Tier', 'GlobalNetworkPolicy', 'NetworkPolicy', 'Profile', 'WorkloadEndpoint', 'NetworkSet', 'GlobalNetworkSet']),
    );
  });

  it.each(exampleDocs.map((d) => [`${d.file.slice(root.length + 1)} ${String(d.obj.kind)} ${String(asObj(d.obj.metadata, 'm').name)}`, d] as const))(
    '%s is valid against its CRD',
    (_name, d) => {
      expect(d.obj.apiVersion).toBe('projectcalico.org/v3');
      expect(validateObject(d.obj)).toEqual([]);
    },
  );

  it('keep the Kubernetes side in examples/k8s and out of the Calico directory', () => {
    expect(k8sDocs.length).toBeGreaterThan(0);
    for (const d of k8sDocs) expect(String(d.obj.apiVersion)).not.toMatch(/projectcalico\.org/);
  });

  const k8s = (kind: string, namespace: string | undefined, name: string): Obj => {
    const found = k8sDocs.find((d) => {
      const m = asObj(d.obj.metadata, 'metadata');
      return d.obj.kind === kind && m.name === name && m.namespace === namespace;
    });
    if (found === undefined) throw new Error(`examples/k8s has no ${kind} ${namespace ?? ''}/${name}`);
    return found.obj;
  };
  const labelsOf = (o: Obj): Record<string, string> => (asObj(o.metadata, 'metadata').labels ?? {}) as Record<string, string>;

  it('derive the WorkloadEndpoint from its pod the way Calico does', () => {
    const wep = exampleDocs.find((d) => d.obj.kind === 'WorkloadEndpoint')!.obj;
    const meta = asObj(wep.metadata, 'metadata');
    const spec = asObj(wep.spec, 'spec');
    const ns = String(meta.namespace);
    const pod = k8s('Pod', ns, String(spec.pod));
    const podSpec = asObj(pod.spec, 'pod.spec');
    const dbl = (s: unknown): string => String(s).replaceAll('-', '--');

    expect(meta.name).toBe(`${dbl(spec.node)}-k8s-${dbl(spec.pod)}-${dbl(spec.endpoint)}`);
    const hash = createHash('sha1').update(`${ns}.${String(spec.pod)}`).digest('hex').slice(0, 11);
    expect(spec.interfaceName).toBe(`cali${hash}`);
    expect(spec.node).toBe(podSpec.nodeName);
    expect(spec.serviceAccountName).toBe(podSpec.serviceAccountName);
    expect(spec.ipNetworks).toEqual([`${String(asObj(pod.status, 'status').podIP)}/32`]);
    expect(spec.profiles).toEqual([`kns.${ns}`, `ksa.${ns}.${String(podSpec.serviceAccountName)}`]);
    expect(labelsOf(wep)).toEqual({
      ...labelsOf(pod),
      'projectcalico.org/namespace': ns,
      'projectcalico.org/orchestrator': 'k8s',
      'projectcalico.org/serviceaccount': podSpec.serviceAccountName,
    });
    const containerPorts = (podSpec.containers as Obj[]).flatMap((c) => (c.ports as Obj[] | undefined) ?? []);
    expect(spec.ports).toEqual(containerPorts.map((p) => ({ name: p.name, port: p.containerPort, protocol: p.protocol })));
  });

  it('derive the profiles from the namespace and service account the way Calico does', () => {
    const profile = (name: string): Obj =>
      asObj(exampleDocs.find((d) => d.obj.kind === 'Profile' && asObj(d.obj.metadata, 'm').name === name)!.obj.spec, name);
    const prefixed = (prefix: string, labels: Record<string, string>, name: string): Record<string, string> => ({
      ...Object.fromEntries(Object.entries(labels).map(([k, v]) => [`${prefix}${k}`, v])),
      [`${prefix}projectcalico.org/name`]: name,
    });
    expect(profile('kns.shop').labelsToApply).toEqual(prefixed('pcns.', labelsOf(k8s('Namespace', undefined, 'shop')), 'shop'));
    expect(profile('kns.shop').ingress).toEqual([{ action: 'Allow' }]);
    expect(profile('kns.shop').egress).toEqual([{ action: 'Allow' }]);
    expect(profile('ksa.shop.api').labelsToApply).toEqual(prefixed('pcsa.', labelsOf(k8s('ServiceAccount', 'shop', 'api')), 'api'));
  });
});

describe('fixtures', () => {
  const valid = yamlFiles(join(testdataDir, 'valid')).flatMap(loadYaml);
  it.each(valid.map((d) => [`${d.file.slice(testdataDir.length + 1)} ${String(asObj(d.obj.metadata, 'm').name)}`, d] as const))(
    'accepts %s',
    (_name, d) => {
      expect(validateObject(d.obj)).toEqual([]);
    },
  );

  it.each(yamlFiles(join(testdataDir, 'invalid')).map((f) => [f.slice(testdataDir.length + 1), f] as const))(
    'rejects %s at the expected field',
    (_name, f) => {
      const docs = loadYaml(f);
      expect(docs).toHaveLength(1);
      const errors = validateObject(docs[0]!.obj);
      expect(errors.map((e) => e.path)).toContain(expectedHeader(f));
    },
  );

  it.each(yamlFiles(join(testdataDir, 'invalid-cel')).map((f) => [f.slice(testdataDir.length + 1), f] as const))(
    '%s passes the plain schema, so only its CEL rule rejects it',
    (_name, f) => {
      const docs = loadYaml(f);
      expect(docs).toHaveLength(1);
      expect(validateObject(docs[0]!.obj)).toEqual([]);
    },
  );
});
