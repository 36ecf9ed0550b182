/**
 * Felix-style state tables (calico-semantics §6): every base state list × every expander ×
 * every flush strategy, each a separate case. The mock dataplane fails on any sequencer
 * contract violation; the harness compares the whole dataplane state after every state.
 */
import { describe, expect, it } from 'vitest';
import { runPlan } from '../../test/calc/harness.ts';
import { stateLists as v3StateLists } from '../../test/calc/fixtures.ts';
import { serviceStates } from '../../test/calc/service-fixtures.ts';
import { expanders, flushStrategies } from '../../test/calc/state.ts';

const check = (got: unknown, want: unknown, name: string): void => {
  expect(got, `state "${name}"`).toEqual(want);
};

const stateLists = [...v3StateLists, { name: 'services (EndpointSlices)', states: serviceStates }];

describe('calc graph state tables', () => {
  it('has at least 40 hand-written states', () => {
    expect(stateLists.reduce((n, l) => n + l.states.length, 0)).toBeGreaterThanOrEqual(40);
  });

  for (const list of stateLists) {
    describe(list.name, () => {
      for (const expander of expanders) {
        const plans = expander.expand(list.states);
        if (plans.length === 0) continue;
        for (const strategy of flushStrategies) {
          it(`${expander.name} / ${strategy}`, () => {
            for (const plan of plans) runPlan(plan, strategy, check);
          });
        }
      }
    });
  }
});
