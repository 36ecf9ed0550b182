#!/bin/sh
# Installed in the kube-proxy image as iptables, iptables-save, iptables-restore and their ip6
# forms. On the first call it picks the backend the node itself uses — kubelet marks it with
# the KUBE-IPTABLES-HINT chain in the mangle table; failing that, the backend holding more
# rules — points Debian's alternatives at it, and re-runs the call. Rules written through the
# other backend would still take effect but sit where the node's tools (and Tessera's
# agent, which detects the node's backend the same way) never look.
set -eu
mode=
for m in nft legacy; do
  if "iptables-$m-save" -t mangle 2>/dev/null | grep -q KUBE-IPTABLES-HINT; then mode=$m; break; fi
done
if [ -z "$mode" ]; then
  nft=$( (iptables-nft-save; ip6tables-nft-save) 2>/dev/null | grep -c '^-' || true)
  legacy=$( (iptables-legacy-save; ip6tables-legacy-save) 2>/dev/null | grep -c '^-' || true)
  if [ "$legacy" -gt "$nft" ]; then mode=legacy; else mode=nft; fi
fi
update-alternatives --set iptables "/usr/sbin/iptables-$mode" >/dev/null
update-alternatives --set ip6tables "/usr/sbin/ip6tables-$mode" >/dev/null
exec "$0" "$@"
