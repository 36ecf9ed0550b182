#!/bin/bash
# A minimal pod network for kind nodes, from Debian's containernetworking-plugins (no CNI
# image is pullable here): what kindnet does, as a loop in the node itself.
#  - Once kubelet has registered the node (its kubeconfig exists) and the controller-manager
#    has given it a spec.podCIDR, writes a CNI config: `ptp` (one veth per pod, host routes)
#    with `host-local` IPAM on that CIDR, plus `portmap`. ptp's own ipMasq stays off: it
#    would SNAT pod-to-pod traffic to other nodes, hiding the source pod from network policy.
#  - Every 10 s, routes every other node's pod CIDR via that node's InternalIP (all nodes
#    share the kind network's L2 bridge), and masquerades only traffic from the cluster's
#    pod range to outside it (POD_SUBNET, default kind's 10.244.0.0/16).
# Reads the API with the node's own credentials (system:node may get/list nodes).
set -uo pipefail
pod_subnet=${POD_SUBNET:-10.244.0.0/16}
kc=/etc/kubernetes/kubelet.conf
node=$(hostname)
conf=/etc/cni/net.d/10-tessera-ptp.conflist
k() { kubectl --kubeconfig="$kc" --request-timeout=10s "$@"; }

until [[ -s $kc ]]; do sleep 2; done
while :; do
  if [[ ! -s $conf ]]; then
    cidr=$(k get node "$node" -o jsonpath='{.spec.podCIDR}' 2>/dev/null || true)
    if [[ -n $cidr ]]; then
      mkdir -p /etc/cni/net.d
      cat >"$conf.tmp" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "tessera-ptp",
  "plugins": [
    {"type": "ptp", "ipMasq": false, "mtu": 1500,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
      mv "$conf.tmp" "$conf"
      echo "podnet: $node pod CIDR $cidr, wrote $conf"
    fi
  fi
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>/dev/null |
    while read -r name cidr ip; do
      [[ $name == "$node" || -z $cidr || -z $ip ]] && continue
      ip route replace "$cidr" via "$ip" || echo "podnet: route $cidr via $ip failed"
    done
  iptables -t nat -C POSTROUTING -s "$pod_subnet" ! -d "$pod_subnet" -m comment --comment tessera-podnet -j MASQUERADE 2>/dev/null ||
    iptables -t nat -A POSTROUTING -s "$pod_subnet" ! -d "$pod_subnet" -m comment --comment tessera-podnet -j MASQUERADE
  sleep 10
done
