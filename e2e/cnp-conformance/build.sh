#!/usr/bin/env bash
# Builds what `make cnp-conformance` (run.sh, README.md here) needs, into
#   ${TESSERA_CACHE:-$HOME/.cache/tessera}/cnp-conformance/<digest>/
#     conformance.test   `go test -c sigs.k8s.io/network-policy-api/conformance` at go.mod's v0.3.0
#     agnhost            static agnhost from k8s.io/kubernetes' test/images/agnhost (agnhost/)
#     agnhost.tar        image registry.k8s.io/e2e-test-images/agnhost:2.45 (agnhost.Containerfile
#                        on the local Debian base, images/base.sh), a docker-archive for
#                        `kind load image-archive`
# (agnhost's Go tests run first) and prints that directory on its last line (progress and timings go to stderr). The digest
# covers this directory's sources (go.mod, go.sum, agnhost/*.go, the Containerfile, this
# script): when all three outputs are there it does nothing (cheap enough for `make setup`).
# Modules come from the Go module proxy into Tessera's shared Go caches (../go-env.sh); go.sum
# holds every checksum and -mod=readonly fails loudly instead of editing it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
digest="$(cd "$here" && cat go.mod go.sum agnhost/*.go agnhost.Containerfile build.sh | sha256sum | cut -c1-16)"
out_dir="$cache/cnp-conformance/$digest"
image=registry.k8s.io/e2e-test-images/agnhost:2.45
base=${BASE_IMAGE:-localhost/debian:bookworm}

built() { [[ -x "$out_dir/conformance.test" && -x "$out_dir/agnhost" && -s "$out_dir/agnhost.tar" ]]; }
if built; then
  echo "$out_dir"
  exit 0
fi

mkdir -p "$cache/cnp-conformance"
exec 9>"$cache/cnp-conformance/.build.lock"
flock 9
if built; then
  echo "$out_dir"
  exit 0
fi

source "$here/../go-env.sh"
export GOFLAGS=-mod=readonly
mkdir -p "$out_dir"
cd "$here"

start=$SECONDS
echo "build.sh: $("$go_bin" version); building the conformance suite (sigs.k8s.io/network-policy-api v0.3.0)" >&2
"$go_bin" test -c -trimpath -o "$out_dir/conformance.test.tmp" sigs.k8s.io/network-policy-api/conformance >&2
mv "$out_dir/conformance.test.tmp" "$out_dir/conformance.test"
echo "build.sh: conformance.test built in $((SECONDS - start)) s" >&2

start=$SECONDS
# The SCTP tolerance's own tests (agnhost/sctp_tolerance_test.go) before the binary is used.
"$go_bin" test ./agnhost >&2
"$go_bin" build -trimpath -o "$out_dir/agnhost.tmp" ./agnhost >&2
mv "$out_dir/agnhost.tmp" "$out_dir/agnhost"
echo "build.sh: agnhost built in $((SECONDS - start)) s" >&2

start=$SECONDS
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/images/containers.conf}
if [[ $base == localhost/debian:bookworm ]]; then
  bash "$root/images/base.sh" >&2
fi
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
cp "$out_dir/agnhost" "$context/agnhost"
podman build --layers --quiet --build-arg "BASE_IMAGE=$base" -t "$image" \
  -f "$here/agnhost.Containerfile" "$context" >/dev/null
rm -f "$out_dir/agnhost.tar.tmp"
podman save --quiet --format docker-archive -o "$out_dir/agnhost.tar.tmp" "$image"
mv "$out_dir/agnhost.tar.tmp" "$out_dir/agnhost.tar"
echo "build.sh: image $image ($out_dir/agnhost.tar) built in $((SECONDS - start)) s" >&2
echo "$out_dir"
