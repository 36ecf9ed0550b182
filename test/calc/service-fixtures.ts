/**
 * `services` rule matches in state-table form, modelled on Felix's EndpointSlice states
 * (`felix/calc/states_for_test.go`, reference §D.3): the IP-set ids are Felix's, checked
 * byte for byte, and the members what `membersFromEndpointSlice` makes.
 */
import type { GlobalNetworkPolicy, NetworkPolicy } from '../../src/api/index.ts';
import { gnp, knp, localWlEp1, pk } from './fixtures.ts';
import { StateBuilder, type EndpointSliceKV, type State } from './state.ts';

/** Felix's ids for `default/svc` (states_for_test.go). */
export const SVC_PORTS_ID = 'svc:Jhwii46PCMT5NlhWsUqZmv7al8TeHFbNQMhoVg';
export const SVC_NOPORTS_ID = 'svcnoport:T03S_6hogdrGKrNFBcbKTFsH_uKwDHEo8JddOg';

export function endpointSlice(
  name: string,
  opts: { namespace?: string; service?: string; addressType?: string; addresses: string[][]; ports: EndpointSliceKV['ports'] },
): EndpointSliceKV {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: opts.namespace ?? 'default', labels: opts.service === undefined ? {} : { 'kubernetes.io/service-name': opts.service } },
    addressType: opts.addressType ?? 'IPv4',
    // Conditions are ignored: a not-ready endpoint is a member all the same.
    endpoints: opts.addresses.map((addresses, i) => ({ addresses, conditions: { ready: i % 2 === 0 } })),
    ports: opts.ports,
  };
}

const slice1 = endpointSlice('svc-abc', { service: 'svc', addresses: [['10.0.0.1']], ports: [{ name: 'http', protocol: 'TCP', port: 80 }] });
const slice1NewIPs = endpointSlice('svc-abc', { service: 'svc', addresses: [['10.0.0.1'], ['10.0.0.2', '10.0.0.3']], ports: [{ name: 'http', protocol: 'TCP', port: 80 }] });
/** Overlaps slice1NewIPs on 10.0.0.2:80; a port without protocol is TCP, one without a number adds nothing. */
const slice2 = endpointSlice('svc-def', {
  service: 'svc',
  addresses: [['10.0.0.2'], ['10.0.0.4', '10.0.0.4']],
  ports: [{ port: 80 }, { name: 'all', protocol: 'TCP', port: null }, { name: 'dns', protocol: 'UDP', port: 53 }],
});
const sliceV6 = endpointSlice('svc-v6', { service: 'svc', addressType: 'IPv6', addresses: [['FD00:0::1']], ports: [{ name: 'x', protocol: 'SCTP', port: 80 }] });
const sliceFqdn = endpointSlice('svc-fqdn', { service: 'svc', addressType: 'FQDN', addresses: [['db.example.com']], ports: [{ protocol: 'TCP', port: 80 }] });
/** Another Service's slice, and a slice of no Service: neither touches default/svc's sets. */
const otherSlice = endpointSlice('other-abc', { service: 'other', addresses: [['10.9.0.1']], ports: [{ protocol: 'TCP', port: 80 }] });
const orphanSlice = endpointSlice('orphan', { addresses: [['10.9.0.2']], ports: [{ protocol: 'TCP', port: 80 }] });
const otherNsSlice = endpointSlice('svc-abc', { namespace: 'prod', service: 'svc', addresses: [['10.9.0.3']], ports: [{ protocol: 'TCP', port: 80 }] });

const servicePolicy: GlobalNetworkPolicy = gnp('svc-policy', {
  selector: 'all()',
  types: ['Egress'],
  egress: [{ action: 'Allow', destination: { services: { name: 'svc', namespace: 'default' } } }],
});
const servicePolicyNoPorts: GlobalNetworkPolicy = gnp('svc-policy-in', {
  selector: 'all()',
  types: ['Ingress'],
  ingress: [{ action: 'Allow', protocol: 'TCP', source: { services: { name: 'svc', namespace: 'default' }, ports: [1024] } }],
});
/** A namespaced policy's empty `services.namespace` is its own namespace: the same set as `default/svc`. */
const namespacedPolicy: NetworkPolicy = knp('default', 'svc-knp', {
  selector: 'all()',
  types: ['Egress'],
  egress: [{ action: 'Allow', destination: { services: { name: 'svc' } } }],
});
const policyWithoutServices: GlobalNetworkPolicy = gnp('svc-policy', { selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow' }] });

const EP1_PROFILES = ['prof-1', 'prof-2', 'prof-missing'];

const inactive = StateBuilder.from()
  .withName('EndpointSlice, no policy uses it: no set')
  .withKVUpdates(localWlEp1, slice1, otherSlice, orphanSlice, otherNsSlice)
  .withActiveProfiles(...EP1_PROFILES)
  .withEndpoint('default/ep1', []);

const active = inactive
  .withName('egress policy to default/svc: the ports set')
  .withKVUpdates(servicePolicy)
  .withIPSet(SVC_PORTS_ID, ['10.0.0.1,tcp:80'])
  .withActivePolicies(pk('svc-policy'))
  .withEndpoint('default/ep1', [{ name: 'default', ingress: [], egress: ['svc-policy'] }]);

export const serviceStates: readonly State[] = [
  inactive.build(),
  active.build(),
  active.withName('slice gets new addresses').withKVUpdates(slice1NewIPs).withIPSet(SVC_PORTS_ID, ['10.0.0.1,tcp:80', '10.0.0.2,tcp:80', '10.0.0.3,tcp:80']).build(),
  active
    .withName('two overlapping slices: members counted across them')
    .withKVUpdates(slice1NewIPs, slice2)
    .withIPSet(SVC_PORTS_ID, ['10.0.0.1,tcp:80', '10.0.0.2,tcp:80', '10.0.0.3,tcp:80', '10.0.0.4,tcp:80', '10.0.0.2,udp:53', '10.0.0.4,udp:53'])
    .build(),
  active
    .withName('the first slice deleted: the shared member stays')
    .withKVUpdates(slice2)
    .withKVDeletes('EndpointSlice/default/svc-abc')
    .withIPSet(SVC_PORTS_ID, ['10.0.0.2,tcp:80', '10.0.0.4,tcp:80', '10.0.0.2,udp:53', '10.0.0.4,udp:53'])
    .build(),
  active
    .withName('IPv6 (canonical) and FQDN slices: v6 members, FQDNs skipped')
    .withKVUpdates(sliceV6, sliceFqdn)
    .withIPSet(SVC_PORTS_ID, ['10.0.0.1,tcp:80', 'fd00::1,sctp:80'])
    .build(),
  inactive
    .withName('ingress policy from default/svc: the no-ports set')
    .withKVUpdates(servicePolicyNoPorts, sliceV6)
    .withIPSet(SVC_NOPORTS_ID, ['10.0.0.1/32', 'fd00::1/128'])
    .withActivePolicies(pk('svc-policy-in'))
    .withEndpoint('default/ep1', [{ name: 'default', ingress: ['svc-policy-in'], egress: [] }])
    .build(),
  active
    .withName('ports and no-ports sets of one Service together')
    .withKVUpdates(servicePolicyNoPorts)
    .withIPSet(SVC_NOPORTS_ID, ['10.0.0.1/32'])
    .withActivePolicies(pk('svc-policy'), pk('svc-policy-in'))
    .withEndpoint('default/ep1', [{ name: 'default', ingress: ['svc-policy-in'], egress: ['svc-policy'] }])
    .build(),
  inactive
    .withName("namespaced policy, services without namespace: the policy's namespace")
    .withKVUpdates(namespacedPolicy)
    .withIPSet(SVC_PORTS_ID, ['10.0.0.1,tcp:80'])
    .withActivePolicies(pk('svc-knp', { namespace: 'default' }))
    .withEndpoint('default/ep1', [{ name: 'default', ingress: [], egress: ['svc-knp'] }])
    .build(),
  inactive
    .withName('the last policy stops using the Service: set removed')
    .withKVUpdates(policyWithoutServices)
    .withActivePolicies(pk('svc-policy'))
    .withEndpoint('default/ep1', [{ name: 'default', ingress: [], egress: ['svc-policy'] }])
    .build(),
];
