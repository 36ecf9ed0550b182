#!/bin/bash
# A minimal pod network for kind nodes, from Debian's containernetworking-plugins (no CNI
# image is pullable here): what kindnet does, as a loop in the node itself.
#  - Once kubelet has registered the node (its kubeconfig exists) and the controller-manager
#    has given it spec.podCIDRs (one per family on a dual-stack cluster), writes a CNI config:
#    `ptp` (one veth per pod, host routes) with /kind/bin/tessera-ipam.sh as IPAM — host-local
#    on those CIDRs, or the addresses of Calico's cni.projectcalico.org/ipAddrs annotation —
#    plus `portmap`. ptp's own ipMasq stays off: it would SNAT pod-to-pod traffic to other
#    nodes, hiding the source pod from network policy.
#  - Every 10 s, routes every other node's pod CIDRs via that node's InternalIP of the same
#    family (all nodes share the kind network's L2 bridge), and masquerades only traffic from
#    the cluster's pod ranges to outside them (POD_SUBNET, default kind's 10.244.0.0/16, and
#    POD_SUBNET6, default kind's fd00:10:244::/56).
# Reads the API with the node's own credentials (system:node may get/list nodes).
set -uo pipefail
pod_subnet=${POD_SUBNET:-10.244.0.0/16}
pod_subnet6=${POD_SUBNET6:-fd00:10:244::/56}
kc=/etc/kubernetes/kubelet.conf
node=$(hostname)
conf=/etc/cni/net.d/10-tessera-ptp.conflist
k() { kubectl --kubeconfig="$kc" --request-timeout=10s "$@"; }

until [[ -s $kc ]]; do sleep 2; done
while :; do
  if [[ ! -s $conf ]]; then
    cidrs=$(k get node "$node" -o jsonpath='{.spec.podCIDRs[*]}' 2>/dev/null || true)
    if [[ -n $cidrs ]]; then
      ranges=() routes=()
      for cidr in $cidrs; do
        ranges+=("[{\"subnet\": \"$cidr\"}]")
        if [[ $cidr == *:* ]]; then routes+=('{"dst": "::/0"}'); else routes+=('{"dst": "0.0.0.0/0"}'); fi
      done
      mkdir -p /etc/cni/net.d
      cat >"$conf.tmp" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "tessera-ptp",
  "plugins": [
    {"type": "ptp", "ipMasq": false, "mtu": 1500,
     "ipam": {"type": "tessera-ipam", "ranges": [$(IFS=,; echo "${ranges[*]}")], "routes": [$(IFS=,; echo "${routes[*]}")]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
      mv "$conf.tmp" "$conf"
      echo "podnet: $node pod CIDRs $cidrs, wrote $conf"
    fi
  fi
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"|"}{.spec.podCIDRs[*]}{"|"}{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>/dev/null |
    while IFS='|' read -r name cidrs ips; do
      [[ $name == "$node" || -z $cidrs || -z $ips ]] && continue
      for cidr in $cidrs; do
        for ip in $ips; do
          # The InternalIP of the CIDR's family.
          if [[ $cidr == *:* ]]; then [[ $ip == *:* ]] || continue; else [[ $ip != *:* ]] || continue; fi
          ip route replace "$cidr" via "$ip" || echo "podnet: route $cidr via $ip failed"
        done
      done
    done
  iptables -t nat -C POSTROUTING -s "$pod_subnet" ! -d "$pod_subnet" -m comment --comment tessera-podnet -j MASQUERADE 2>/dev/null ||
    iptables -t nat -A POSTROUTING -s "$pod_subnet" ! -d "$pod_subnet" -m comment --comment tessera-podnet -j MASQUERADE
  if [[ -s /proc/net/if_inet6 ]]; then
    ip6tables -t nat -C POSTROUTING -s "$pod_subnet6" ! -d "$pod_subnet6" -m comment --comment tessera-podnet -j MASQUERADE 2>/dev/null ||
      ip6tables -t nat -A POSTROUTING -s "$pod_subnet6" ! -d "$pod_subnet6" -m comment --comment tessera-podnet -j MASQUERADE
  fi
  sleep 10
done
