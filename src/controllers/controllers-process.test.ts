import { describe, expect, it } from 'vitest';

import { kindsWatchedBy, resourceName } from '../api/kinds.ts';
import { InformerFactory } from '../informers/informer-factory.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { buildControllers } from './controllers-process.ts';
import type { Writer } from './object-writer.ts';
import { TierController } from './tier-controller.ts';

const writer: Writer = {
  apply: async () => undefined,
  createIfAbsent: async () => false,
  delete: async () => true,
  warningEvent: async () => undefined,
  idle: async () => undefined,
};

function names(workloadEndpoints?: boolean): { controllers: string[]; informers: string[] } {
  const informers: string[] = [];
  const factory = new InformerFactory({
    listerWatcherFor: (r) => {
      informers.push(`${r.group}/${r.plural}`);
      return new ScriptedListerWatcher(r.plural);
    },
  });
  const controllers = buildControllers(factory, writer, workloadEndpoints === undefined ? {} : { workloadEndpoints });
  return { controllers: controllers.map((c) => c.controller.name), informers: informers.sort() };
}

describe('buildControllers', () => {
  it('runs the converter, both profile controllers, pod → WorkloadEndpoint and (switched off: removing only) automatic host endpoints by default', () => {
    expect(names()).toEqual({
      controllers: ['policy-converter', 'namespace-profiles', 'serviceaccount-profiles', 'workload-endpoints', 'auto-host-endpoints'],
      informers: [
        '/namespaces',
        '/nodes',
        '/pods',
        '/serviceaccounts',
        'networking.k8s.io/networkpolicies',
        'projectcalico.org/hostendpoints',
        'projectcalico.org/networkpolicies',
        'projectcalico.org/profiles',
        'projectcalico.org/workloadendpoints',
      ],
    });
  });

  it('workloadEndpoints: false (--no-workload-endpoints) neither watches pods nor writes endpoints', () => {
    const { controllers, informers } = names(false);
    expect(controllers).not.toContain('workload-endpoints');
    expect(informers).not.toContain('/pods');
    expect(informers).not.toContain('projectcalico.org/workloadendpoints');
  });

  it('with the tier controller, the controllers watch exactly the kind table\'s controllers rows', () => {
    const informers: string[] = [];
    const factory = new InformerFactory({
      listerWatcherFor: (r) => {
        informers.push(resourceName(r));
        return new ScriptedListerWatcher(r.plural);
      },
    });
    buildControllers(factory, writer);
    new TierController({ factory, writer, api: { setFinalizers: async () => undefined, listPoliciesInTier: async () => [] } });
    expect(informers.sort()).toEqual(kindsWatchedBy('controllers').map(resourceName).sort());
  });
});
