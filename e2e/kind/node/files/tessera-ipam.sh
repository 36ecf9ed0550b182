#!/bin/bash
# CNI IPAM plugin of Tessera's kind nodes (installed as /usr/lib/cni/tessera-ipam): Calico's
# `cni.projectcalico.org/ipAddrs` annotation, on Debian's plugins.
#  - A pod annotated `cni.projectcalico.org/ipAddrs: '["10.66.1.10","fd00:66:1::10"]'` gets
#    exactly those addresses (the `static` plugin), as Calico's IPAM gives them. The e2e runner
#    pins its scenarios' pod IPs this way: scenario policies name them in nets and ipBlocks.
#    Gateways: IPv4 the first address of the pod's /24 (the last when the pod has the first),
#    which ptp puts on the host veth; IPv6 fe80::1, always on-link. Routes to a pinned address
#    from the other nodes are the runner's job (it plays the routing daemon: e2e/runner/kind-cluster.ts).
#  - Every other pod: `host-local` on the node's pod CIDR, with this plugin's config unchanged.
# The pod is read with the node's own credentials (the Node authorizer lets a node read the
# pods bound to it). Errors are CNI error objects naming the pod and the annotation.
set -uo pipefail
input=$(cat)
# Overridable for e2e/kind/tessera-ipam.unit.test.ts, which runs this script with stubs.
plugins=${TESSERA_IPAM_PLUGINS:-/usr/lib/cni}
kubectl=${TESSERA_IPAM_KUBECTL:-/usr/bin/kubectl}
annotation=cni.projectcalico.org/ipAddrs

fail() {
  printf '{"cniVersion":"0.4.0","code":999,"msg":"tessera-ipam: %s"}\n' "$1"
  exit 1
}

host_local() { exec "$plugins/host-local" <<<"$input"; }

[[ ${CNI_COMMAND:-} == ADD ]] || host_local
ns=$(tr ';' '\n' <<<"${CNI_ARGS:-}" | sed -n 's/^K8S_POD_NAMESPACE=//p')
pod=$(tr ';' '\n' <<<"${CNI_ARGS:-}" | sed -n 's/^K8S_POD_NAME=//p')
[[ -n $ns && -n $pod ]] || host_local
value=$("$kubectl" --kubeconfig=/etc/kubernetes/kubelet.conf --request-timeout=10s -n "$ns" get pod "$pod" \
  -o "jsonpath={.metadata.annotations.${annotation//./\\.}}" 2>&1) || fail "reading pod $ns/$pod: ${value//\"/\'}"
[[ -n $value ]] || host_local

addresses=()
routes=()
for ip in $(tr -d '[]" ' <<<"$value" | tr ',' ' '); do
  if [[ $ip =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]]; then
    prefix="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.${BASH_REMATCH[3]}"
    gateway="$prefix.1"
    [[ $ip == "$gateway" ]] && gateway="$prefix.254"
    addresses+=("{\"address\":\"$ip/24\",\"gateway\":\"$gateway\"}")
    routes+=('{"dst":"0.0.0.0/0"}')
  elif [[ $ip =~ ^[0-9a-fA-F:]+$ && $ip == *:* ]]; then
    addresses+=("{\"address\":\"$ip/128\",\"gateway\":\"fe80::1\"}")
    routes+=('{"dst":"::/0"}')
  else
    fail "pod $ns/$pod: annotation $annotation: \\\"$ip\\\" is not an IP address (value ${value//\"/\'})"
  fi
done
((${#addresses[@]} > 0)) || fail "pod $ns/$pod: annotation $annotation lists no address"
join() { local IFS=,; echo "$*"; }
version=$(sed -n 's/.*"cniVersion" *: *"\([^"]*\)".*/\1/p' <<<"$input" | head -n1)
exec "$plugins/static" <<<"$(printf '{"cniVersion":"%s","name":"tessera-pinned","ipam":{"type":"static","addresses":[%s],"routes":[%s]}}' \
  "${version:-0.4.0}" "$(join "${addresses[@]}")" "$(join $(printf '%s\n' "${routes[@]}" | sort -u))")"
