/**
 * The projectcalico.org/v3 CustomResourceDefinitions, built from the schema declaration
 * (schema.ts) and the kind table (kinds.ts): the table gives each CRD's group, version,
 * plural and scope; the schema its OpenAPI and CEL rules; this module only what a CRD adds
 * for kubectl — short names, printer columns, selectable fields — and the staged kinds, which
 * are their enforced kind's schema renamed, with `stagedAction` in the spec.
 *
 * crds/generate.ts writes these to crds/*.yaml; e2e/crds.unit.test.ts fails when a file drifts.
 */
import { KINDS, resourceName } from './kinds.ts';
import type { KindRow } from './kinds.ts';
import { KIND_SCHEMAS, STAGED_ACTION, STAGED_KUBERNETES_NETWORK_POLICY_SPEC } from './schema.ts';
import type { KindSchema } from './schema.ts';
import type { CelRule } from './schema-node.ts';
import { DELETE_WITH_SPEC } from './staged.ts';
import type { TSchema } from '@sinclair/typebox';
import { toOpenApi } from './schema-openapi.ts';
import type { OpenApiNode } from './schema-openapi.ts';
import { NETWORK_POLICY_API_GROUP } from './cluster-network-policy.ts';
import { clusterNetworkPolicyCrd } from './cluster-network-policy-crd.ts';

export interface CrdFile {
  /** File name inside crds/. */
  readonly file: string;
  readonly crd: OpenApiNode;
}

/** kubectl's view of a kind: what `kubectl get` prints, which short names it answers to. */
interface Presentation {
  readonly shortNames?: readonly string[];
  readonly printerColumns: readonly OpenApiNode[];
  readonly selectableFields?: readonly string[];
}

const AGE_COLUMN: OpenApiNode = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

const POLICY_COLUMNS: readonly OpenApiNode[] = [
  { name: 'Tier', type: 'string', jsonPath: '.spec.tier', description: 'Tier the policy belongs to' },
  { name: 'Order', type: 'number', jsonPath: '.spec.order', description: 'Order within the tier (lower first)' },
  { name: 'Selector', type: 'string', jsonPath: '.spec.selector', description: 'Endpoints the policy applies to' },
  AGE_COLUMN,
];

const PRESENTATION: Readonly<Record<keyof typeof KIND_SCHEMAS, Presentation>> = {
  // Calico's own short names; `netpol` and `np` stay with networking.k8s.io.
  NetworkPolicy: { shortNames: ['cnp', 'caliconetworkpolicy'], printerColumns: POLICY_COLUMNS, selectableFields: ['.spec.tier'] },
  GlobalNetworkPolicy: { shortNames: ['gnp', 'cgnp'], printerColumns: POLICY_COLUMNS, selectableFields: ['.spec.tier'] },
  Tier: {
    printerColumns: [
      { name: 'Order', type: 'number', jsonPath: '.spec.order', description: 'Order in which the tier applies (lower first)' },
      { name: 'DefaultAction', type: 'string', jsonPath: '.spec.defaultAction', description: 'Action at the end of the tier' },
      AGE_COLUMN,
    ],
  },
  // calicoctl's alias for profiles.
  Profile: { shortNames: ['pro'], printerColumns: [AGE_COLUMN] },
  WorkloadEndpoint: {
    // calicoctl's alias for workload endpoints.
    shortNames: ['wep'],
    printerColumns: [
      { name: 'Node', type: 'string', jsonPath: '.spec.node', description: 'Node the endpoint lives on' },
      { name: 'Pod', type: 'string', jsonPath: '.spec.pod', description: 'Pod of the endpoint' },
      { name: 'Interface', type: 'string', jsonPath: '.spec.interfaceName', description: 'Host-side interface' },
      { name: 'Networks', type: 'string', jsonPath: '.spec.ipNetworks', description: 'Endpoint addresses' },
      AGE_COLUMN,
    ],
    // Lets an agent list/watch only its own node's endpoints (spec.node=<node>).
    selectableFields: ['.spec.node'],
  },
  NetworkSet: { printerColumns: [AGE_COLUMN] },
  GlobalNetworkSet: { printerColumns: [AGE_COLUMN] },
  // Calico's short names and columns.
  HostEndpoint: {
    shortNames: ['hep', 'heps'],
    printerColumns: [
      { name: 'Node', type: 'string', jsonPath: '.spec.node', description: 'Node whose interfaces the endpoint covers' },
      { name: 'Interface', type: 'string', jsonPath: '.spec.interfaceName', description: 'Interface covered ("*": all of them)' },
      AGE_COLUMN,
    ],
  },
};

/** The staged kinds and the enforced kind each one previews (StagedKubernetesNetworkPolicy has its own spec). */
const STAGED_OF: Readonly<Record<string, keyof typeof KIND_SCHEMAS>> = {
  StagedNetworkPolicy: 'NetworkPolicy',
  StagedGlobalNetworkPolicy: 'GlobalNetworkPolicy',
};

function crd(row: KindRow, schema: KindSchema, view: Presentation): OpenApiNode {
  const root: OpenApiNode = {
    type: 'object',
    description: schema.description,
    properties: {
      apiVersion: { type: 'string', description: 'The versioned schema of this object: projectcalico.org/v3.' },
      kind: { type: 'string', description: `The REST resource this object represents: ${row.kind}.` },
      metadata: { type: 'object' },
      spec: toOpenApi(schema.spec, 'spec'),
      ...(schema.status === undefined ? {} : { status: toOpenApi(schema.status, 'status') }),
    },
    ...(schema.specRequired ? { required: ['spec'] } : {}),
    ...(schema.rules === undefined ? {} : { 'x-kubernetes-validations': structuredClone(schema.rules) }),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: resourceName(row) },
    spec: {
      group: row.group,
      scope: row.namespaced ? 'Namespaced' : 'Cluster',
      names: {
        kind: row.kind,
        listKind: `${row.kind}List`,
        plural: row.plural,
        singular: row.kind.toLowerCase(),
        ...(view.shortNames === undefined ? {} : { shortNames: [...view.shortNames] }),
      },
      versions: [
        {
          name: row.version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: root },
          additionalPrinterColumns: structuredClone(view.printerColumns),
          ...(view.selectableFields === undefined ? {} : { selectableFields: view.selectableFields.map((jsonPath) => ({ jsonPath })) }),
        },
      ],
    },
  };
}

/**
 * A staged kind (Calico 3.30 OSS): the enforced kind's schema, described as never enforced,
 * with `stagedAction` in its spec, which is then optional (a Delete needs nothing else). No
 * short names: those stay with the enforced kinds.
 */
function staged(row: KindRow, enforced: keyof typeof KIND_SCHEMAS): OpenApiNode {
  const base = KIND_SCHEMAS[enforced];
  const properties = { ...base.spec.properties, stagedAction: STAGED_ACTION };
  const spec = {
    ...base.spec,
    properties,
    'x-kubernetes-validations': [...(base.spec['x-kubernetes-validations'] as CelRule[] | undefined ?? []), deleteRule(properties, ['tier'], DELETE_WITH_SPEC.StagedNetworkPolicy)],
  };
  const schema: KindSchema = {
    ...base,
    description: `Staged (never enforced): ${base.description} Tessera's simulate and explain show what committing it would change.`,
    spec,
    specRequired: false,
  };
  const { shortNames: _enforcedOnly, ...view } = PRESENTATION[enforced];
  return crd(row, schema, view);
}

/**
 * Calico's rule for a staged Delete (api/staged.ts `DELETE_WITH_SPEC`): every spec field but
 * `stagedAction` and the `exempt` ones at its zero value — a string empty, a boolean false,
 * anything else absent; a label selector (`podSelector`) without terms.
 */
function deleteRule(properties: Readonly<Record<string, TSchema>>, exempt: readonly string[], message: string): CelRule {
  const zero = Object.entries(properties)
    .filter(([name]) => name !== 'stagedAction' && !exempt.includes(name))
    .map(([name, node]) => {
      const type = (node as { type?: unknown }).type;
      if (type === 'string') return `(!has(self.${name}) || self.${name} == '')`;
      if (type === 'boolean') return `(!has(self.${name}) || !self.${name})`;
      if (name === 'podSelector') return `(!has(self.${name}) || (!has(self.${name}.matchLabels) && !has(self.${name}.matchExpressions)))`;
      return `!has(self.${name})`;
    });
  return { rule: `!has(self.stagedAction) || self.stagedAction != 'Delete' || (${zero.join(' && ')})`, message, reason: 'FieldValueForbidden' };
}

function crdOf(row: KindRow): OpenApiNode {
  // The network-policy-api's own CRD: its standard channel is what crds/ and manifests/ install.
  if (row.group === NETWORK_POLICY_API_GROUP) return clusterNetworkPolicyCrd('standard');
  if (row.kind in KIND_SCHEMAS) {
    const kind = row.kind as keyof typeof KIND_SCHEMAS;
    return crd(row, KIND_SCHEMAS[kind], PRESENTATION[kind]);
  }
  const enforced = STAGED_OF[row.kind];
  if (enforced !== undefined) return staged(row, enforced);
  if (row.kind === 'StagedKubernetesNetworkPolicy') {
    return crd(
      row,
      {
        description: "Staged (never enforced): a Kubernetes NetworkPolicy's spec. Tessera's simulate and explain show what committing it would change.",
        spec: {
          ...STAGED_KUBERNETES_NETWORK_POLICY_SPEC,
          'x-kubernetes-validations': [deleteRule(STAGED_KUBERNETES_NETWORK_POLICY_SPEC.properties, [], DELETE_WITH_SPEC.StagedKubernetesNetworkPolicy)],
        },
        specRequired: false,
      },
      { printerColumns: [AGE_COLUMN] },
    );
  }
  throw new RangeError(`buildCrds: the kind table ships a CRD for ${row.kind}, which the schema does not declare`);
}

/** One CRD per kind-table row with `crd: true`, in table order. */
export function buildCrds(): CrdFile[] {
  return KINDS.filter((r: KindRow) => r.crd === true).map((row: KindRow) => ({
    file: `${row.group}_${row.plural}.yaml`,
    crd: crdOf(row),
  }));
}

/**
 * The CRDs of other channels, each in a directory of its channel's name (`experimental/`), so
 * `kubectl apply -f crds/` (which does not recurse) installs one channel only: the
 * ClusterNetworkPolicy CRD of the experimental channel, applied over the standard one to opt in.
 */
export function buildChannelCrds(): CrdFile[] {
  return [{ file: `experimental/${NETWORK_POLICY_API_GROUP}_clusternetworkpolicies.yaml`, crd: clusterNetworkPolicyCrd('experimental') }];
}
