/**
 * The layer check (`npm run lint` runs it; DESIGN.md §2 "Dependency direction" is the source).
 *
 * Each folder of `src/` is one layer with a rank; an import from one folder into another must go
 * to a strictly lower rank. Folders of one rank are peers and never import each other (calc and
 * dataplane speak only proto; agent, controllers, typha and simulate share only what lies
 * below them). A sub-folder (`dataplane/iptables/`) belongs to its folder's layer.
 *
 * The layers are declared once, in `LAYERS`; every rank rule below is derived from it, so a new
 * folder is one entry here (a folder missing from the table fails `src-folder-has-a-layer`).
 *
 * Test files (`*.test.ts`) follow the same rank rule: none needs an exemption. They alone may
 * import the shared test support in `test/`.
 *
 * Run: `npm run lint:layers` (module by module), or
 * `npx depcruise src --collapse '^src/[^/]+/' -T err` (folder to folder: the upward arrows), or
 * `npx depcruise src --collapse '^src/[^/]+/' -T text` (the whole folder graph).
 */

/** Rank of each folder under src/: lower ranks are imported by higher ones, never the reverse. */
export const LAYERS = {
  runtime: 0,
  selector: 1,
  api: 2,
  proto: 2,
  informers: 3,
  syncer: 4,
  convert: 4,
  calc: 5,
  dataplane: 5,
  flowlog: 6,
  agent: 7,
  controllers: 7,
  typha: 7,
  simulate: 7,
  cli: 8,
};

/** Ranks below this one may not import @kubernetes/client-node (DESIGN.md §2). */
const KUBE_CLIENT_FROM_RANK = LAYERS.controllers;

/**
 * The modules below the controllers that may use client-node: the kube ListerWatcher source,
 * and `abortOn`, the per-request abort both the controllers' lease writes and Typha's
 * rebalancer pass to client-node calls (peers, so it lives below them, beside the source).
 * Their tests drive a real client against a loopback server.
 */
const KUBE_CLIENT_ADAPTERS = '^src/informers/kube-(lister-watcher|abort-on)(\\.test)?\\.ts$';

const folders = Object.keys(LAYERS);
const alternation = (names) => `(${names.join('|')})`;

/** One rule per folder: its imports into other folders must go to a lower rank. */
const rankRules = folders.map((folder) => {
  const notLower = folders.filter((other) => other !== folder && LAYERS[other] >= LAYERS[folder]);
  return {
    name: `layer-${folder}`,
    comment:
      `src/${folder} (rank ${LAYERS[folder]}) may import only folders of a lower rank; ` +
      `not ${notLower.join(', ')} (DESIGN.md §2)`,
    severity: 'error',
    from: { path: `^src/${folder}/` },
    to: { path: `^src/${alternation(notLower)}/` },
  };
}).filter((rule) => !rule.to.path.endsWith('()/'));

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...rankRules,
    {
      name: 'src-folder-has-a-layer',
      comment: 'every module of src/ lives in a folder that LAYERS gives a rank',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: `^src/${alternation(folders)}/` },
    },
    {
      name: 'no-circular',
      comment: 'no module of src/ reaches itself through its imports (type-only imports included)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'src-not-to-test-support',
      comment: 'shipped code does not import test support, benchmarks or e2e drivers',
      severity: 'error',
      from: { path: '^src/', pathNot: '\\.test\\.ts$' },
      to: { path: '^(test|bench|e2e)/' },
    },
    {
      name: 'src-tests-not-to-bench-or-e2e',
      comment: 'unit tests beside the code use test/ for support, never bench/ or e2e/',
      severity: 'error',
      from: { path: '\\.test\\.ts$' },
      to: { path: '^(bench|e2e)/' },
    },
    {
      name: 'kube-client-only-in-its-adapters',
      comment:
        'below src/controllers only the kube client adapters in src/informers import @kubernetes/client-node ' +
        '(type-only imports count too: they tie the layer to the client)',
      severity: 'error',
      from: {
        path: `^src/${alternation(folders.filter((f) => LAYERS[f] < KUBE_CLIENT_FROM_RANK))}/`,
        pathNot: KUBE_CLIENT_ADAPTERS,
      },
      to: { path: '(^|/)node_modules/@kubernetes/client-node/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'an import the cruiser cannot resolve would hide from every rule above',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    // Count `import type` too: a type-only import is still an arrow between layers.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.d.ts'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
