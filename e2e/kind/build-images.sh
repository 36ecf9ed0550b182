#!/usr/bin/env bash
# Builds everything a kind cluster needs here, with no registry: the Kubernetes binaries
# (build-kube.sh), the kind CLI (build-kind.sh), the control-plane images, and the node image
#   localhost/tessera-kind-node:<Kubernetes version>
# Images (podman, tagged with the names kubeadm asks for so that nothing is ever pulled):
#   registry.k8s.io/kube-{apiserver,controller-manager,scheduler}:<v>  static binary on scratch
#   registry.k8s.io/kube-proxy:<v>      binary + Debian iptables/ipset/conntrack, backend
#                                       chosen like the node's (images/iptables-select.sh)
#   registry.k8s.io/etcd:<kubeadm's tag>  etcd from the Go module proxy (build-etcd.sh)
#   registry.k8s.io/pause:<kubeadm's tag> images/pause.c, gcc -static
#   registry.k8s.io/coredns/coredns:<kubeadm's tag>  CoreDNS from the proxy (build-coredns.sh)
# each saved with `podman save --format docker-archive` into the node image's /kind/images.
# Incremental: podman's layer cache; the archives are rewritten only when an image changed.
# Prints the node image's name on its last line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/images/containers.conf}
version="${TESSERA_KIND_KUBE_VERSION:-$(tr -d '[:space:]' < "$here/VERSION")}"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}/kind/$version"
base=${BASE_IMAGE:-localhost/debian:bookworm}
node_image="localhost/tessera-kind-node:$version"

timed() {
  local label=$1 start=$SECONDS
  shift
  "$@" >/dev/null
  echo "kind-images: $label done in $((SECONDS - start)) s" >&2
}

if [[ $base == localhost/debian:bookworm ]]; then
  bash "$root/images/base.sh" >&2
fi
bin_dir="$(bash "$here/build-kube.sh" | tail -n1)"
bash "$here/build-kind.sh" >/dev/null

# The image names and tags this kubeadm uses for this version (etcd, pause and CoreDNS
# tags come from kubeadm's constants, not from Kubernetes' version).
declare -A want
while read -r ref; do
  name="${ref%:*}"
  want[${name##*/}]="$ref"
done < <("$bin_dir/kubeadm" config images list --kubernetes-version "$version")

context="$cache/context"
mkdir -p "$context/bin" "$context/images" "$context/kind-base"

# save <image ref> <archive name>: docker-archive with the ref as its tag, replaced only when
# the image id changed (an unchanged archive keeps the node image's layer cache valid).
save() {
  local ref=$1 out="$context/images/$2.tar" id_file="$cache/image-ids/$2" id
  id="$(podman image inspect --format '{{.Id}}' "$ref")"
  if [[ -f $out && "$(cat "$id_file" 2>/dev/null)" == "$id" ]]; then return; fi
  rm -f "$out"
  podman save --quiet --format docker-archive -o "$out" "$ref" >/dev/null
  mkdir -p "$cache/image-ids"
  echo "$id" >"$id_file"
}

for c in kube-apiserver kube-controller-manager kube-scheduler; do
  timed "${want[$c]}" podman build --layers --quiet --build-arg "BINARY=$c" \
    -t "${want[$c]}" -f "$here/images/static.Containerfile" "$bin_dir"
  save "${want[$c]}" "$c"
done
proxy_context="$cache/kube-proxy-context"
mkdir -p "$proxy_context"
cp -p --update "$bin_dir/kube-proxy" "$here/images/iptables-select.sh" "$proxy_context/"
timed "${want[kube-proxy]}" podman build --layers --quiet --build-arg "BASE_IMAGE=$base" \
  -t "${want[kube-proxy]}" -f "$here/images/kube-proxy.Containerfile" "$proxy_context"
save "${want[kube-proxy]}" kube-proxy
etcd_bin="$(bash "$here/build-etcd.sh" | tail -n1)"
timed "${want[etcd]}" podman build --layers --quiet --build-arg BINARY=etcd \
  -t "${want[etcd]}" -f "$here/images/static.Containerfile" "$(dirname "$etcd_bin")"
save "${want[etcd]}" etcd
timed "${want[pause]}" podman build --layers --quiet --build-arg "BASE_IMAGE=$base" \
  -t "${want[pause]}" -f "$here/images/pause.Containerfile" "$here/images"
save "${want[pause]}" pause

coredns_bin="$(bash "$here/build-coredns.sh" | tail -n1)"
timed "${want[coredns]}" podman build --layers --quiet \
  -t "${want[coredns]}" -f "$here/images/coredns.Containerfile" "$(dirname "$coredns_bin")"
save "${want[coredns]}" coredns

# The node image's context: binaries, kind's base files from the kind module, our files.
kind_version="$(tr -d '[:space:]' < "$here/KIND_VERSION")"
kind_files="$(GOMODCACHE="${TESSERA_CACHE:-$HOME/.cache/tessera}/go/mod" GOFLAGS=-mod=mod GOTOOLCHAIN=local \
  go mod download -json "sigs.k8s.io/kind@$kind_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')/images/base/files"
[[ -f $kind_files/usr/local/bin/entrypoint ]] || { echo "kind-images: kind's entrypoint not found under $kind_files" >&2; exit 1; }
for f in kubelet kubeadm kubectl; do cp -p --update "$bin_dir/$f" "$context/bin/$f"; done
rm -rf "$context/kind-base" "$context/files"
cp -r "$kind_files" "$context/kind-base"
chmod -R u+w "$context/kind-base"
cp -r "$here/node/files" "$context/files"

timed "$node_image" podman build --layers --quiet --build-arg "BASE_IMAGE=$base" \
  --build-arg "KUBE_VERSION=$version" -t "$node_image" -f "$here/node/Containerfile" "$context"
podman image inspect --format "kind-images: $node_image is {{.Size}} bytes" "$node_image" >&2
echo "$node_image"
