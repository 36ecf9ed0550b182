#!/usr/bin/env bash
# `make cnp-conformance`: runs the upstream ClusterNetworkPolicy conformance suite (build.sh's
# conformance.test, network-policy-api v0.3.0) against the kind cluster with Tessera installed
# (make kind-up && make kind-deploy first; this script neither creates nor deploys):
#  1. builds what is missing (build.sh; no-op when cached);
#  2. applies the EXPERIMENTAL-channel ClusterNetworkPolicy CRD
#     (manifests/experimental/clusternetworkpolicies.yaml: the named-port and egress `nodes`
#     tests need its fields) and loads the agnhost:2.45 image archive onto the nodes;
#  3. runs TestConformance (anchored: an unanchored pattern also runs TestConformanceProfiles)
#     with the features ClusterNetworkPolicy, ClusterNetworkPolicyNamedPorts and
#     ClusterNetworkPolicyEgressNodePeers;
#  4. prints one row per conformance test (PASS/FAIL, seconds) and every failing probe,
#     classified SCTP (`protocol not supported`: no SCTP in this kernel) or TCP/UDP/other
#     (conformance-report.ts).
# Exits 0 only when every failure is an SCTP probe refused by the kernel.
#
# Subset: CNP_CONFORMANCE_TESTS (or the first argument) is a regular expression over the tests'
# ShortNames, anchored at both ends, e.g.
#   CNP_CONFORMANCE_TESTS='CNPAdminTierIngressTCP|CNPBaselineTier(Ingress|Egress)UDP' make cnp-conformance
# Also: CNP_CONFORMANCE_TIMEOUT (go test -timeout, default 45m), CNP_CONFORMANCE_FEATURES.
# CNP_CONFORMANCE_SCTP=skip runs build.sh's SCTP-less variant (conformance-nosctp.test): the same
# suite with its SCTP probes not run, so the TCP/UDP probes after an SCTP one in the same
# subtest run at all on a kernel without SCTP; the table counts the SCTP probes not run.
# The test binary's output and events are kept in e2e/artifacts/cnp-conformance/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kind_dir="$root/e2e/kind"
version="${TESSERA_KIND_KUBE_VERSION:-$(tr -d '[:space:]' < "$kind_dir/VERSION")}"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
name="${TESSERA_KIND_CLUSTER:-tessera}"
export KUBECONFIG="$cache/kind/$name.kubeconfig"
kubectl="$cache/kind/$version/bin/kubectl"
tests="${1:-${CNP_CONFORMANCE_TESTS:-}}"
timeout="${CNP_CONFORMANCE_TIMEOUT:-45m}"
features="${CNP_CONFORMANCE_FEATURES:-ClusterNetworkPolicy,ClusterNetworkPolicyNamedPorts,ClusterNetworkPolicyEgressNodePeers}"
artifacts="$root/e2e/artifacts/cnp-conformance"

log() { echo "cnp-conformance: $*" >&2; }

if [[ ! -s "$KUBECONFIG" || ! -x "$kubectl" ]] || ! "$kubectl" get --raw /readyz >/dev/null 2>&1; then
  log "no kind cluster answers at $KUBECONFIG: make kind-up && make kind-deploy first"
  exit 1
fi
if [[ -z "$("$kubectl" -n tessera-system get daemonset -o name 2>/dev/null)" ]]; then
  log "Tessera is not installed in the kind cluster: make kind-deploy first"
  exit 1
fi

out_dir="$(bash "$here/build.sh" | tail -n1)"

start=$SECONDS
# The suite's clean-up deletes its namespaces without waiting: a run right after another one
# fails to create its pods in namespaces still terminating.
"$kubectl" wait --for=delete namespace -l conformance-house --timeout=300s >&2 2>/dev/null || true
"$kubectl" apply -f "$root/manifests/experimental/clusternetworkpolicies.yaml" >&2
"$kubectl" wait --for condition=established --timeout=60s crd/clusternetworkpolicies.policy.networking.k8s.io >&2
CONTAINERS_CONF="$kind_dir/containers.conf" KIND_EXPERIMENTAL_PROVIDER=podman \
  "$(bash "$kind_dir/build-kind.sh" | tail -n1)" load image-archive "$out_dir/agnhost.tar" --name "$name" >&2
log "experimental CRD applied and agnhost:2.45 loaded in $((SECONDS - start)) s"

binary=conformance.test
if [[ ${CNP_CONFORMANCE_SCTP:-run} == skip ]]; then
  binary=conformance-nosctp.test
  artifacts="$artifacts-nosctp"
fi

run='^TestConformance$'
if [[ -n "$tests" ]]; then run="^TestConformance\$/^(${tests})\$"; fi
mkdir -p "$artifacts"
raw="$artifacts/conformance.raw"
events="$artifacts/events.jsonl"
rm -f "$raw" "$events"

source "$here/../go-env.sh"
log "running $out_dir/$binary -test.run '$run' (features $features, timeout $timeout)"
start=$SECONDS
code=0
# -test.v=test2json: output framed per (sub)test, so `go tool test2json` attributes every log
# line to the subtest that wrote it. Progress: one line per finished conformance test.
(cd "$artifacts" && "$out_dir/$binary" -test.run "$run" -test.v=test2json -test.timeout "$timeout" \
  --supported-features="$features") >"$raw" 2>&1 &
pid=$!
tail -n +1 -f --pid="$pid" "$raw" | tr -d '\026' |
  grep -a --line-buffered -E -- '^ *--- (PASS|FAIL|SKIP): TestConformance/[^/ ]+ ' >&2 || true
wait "$pid" || code=$?
log "conformance.test exited with $code after $((SECONDS - start)) s"
"$go_bin" tool test2json -t <"$raw" >"$events"
tr -d '\026' <"$raw" >"$artifacts/conformance.log"

npx tsx "$here/report.ts" "$events" "$code"
