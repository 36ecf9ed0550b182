#!/usr/bin/env bash
# Builds what `make cnp-conformance` (run.sh, README.md here) needs, into
#   ${TESSERA_CACHE:-$HOME/.cache/tessera}/cnp-conformance/<digest>/
#     conformance.test   `go test -c sigs.k8s.io/network-policy-api/conformance` at go.mod's v0.3.0
#     conformance-nosctp.test  the same suite with its SCTP probes not run (see below)
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

built() { [[ -x "$out_dir/conformance.test" && -x "$out_dir/conformance-nosctp.test" && -x "$out_dir/agnhost" && -s "$out_dir/agnhost.tar" ]]; }
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
# The SCTP-less variant (run.sh with CNP_CONFORMANCE_SCTP=skip). The unmodified suite ends a
# subtest at its first failing probe, so on a kernel without SCTP the TCP/UDP probes that come
# after an SCTP one in the same subtest never run. This build of the same suite, from a copy of
# the module in a temporary directory (never committed), has PokeServer log
# TESSERA-SCTP-PROBE-NOT-RUN and return for an SCTP probe instead — so those TCP/UDP probes run;
# the report counts the SCTP probes not run apart (conformance-report.ts), never as passes.
variant="$(mktemp -d)"
cp -r "$GOMODCACHE/sigs.k8s.io/network-policy-api@v0.3.0" "$variant/npa"
chmod -R u+w "$variant/npa"
poke="$variant/npa/conformance/utils/kubernetes/helper.go"
sed -i '/^func PokeServer(/a\
\tif protocol == "sctp" {\
\t\tt.Logf("TESSERA-SCTP-PROBE-NOT-RUN sctp %s/%s -> %s:%d (shouldConnect=%v)", clientNamespace, clientPod, targetHost, targetPort, shouldConnect)\
\t\treturn\
\t}' "$poke"
if ! grep -q 'TESSERA-SCTP-PROBE-NOT-RUN' "$poke"; then
  echo "build.sh: could not patch PokeServer in $poke (a new suite version?)" >&2
  exit 1
fi
cp go.mod go.sum suite_deps.go "$variant/"
(cd "$variant" && "$go_bin" mod edit -replace "sigs.k8s.io/network-policy-api=$variant/npa" &&
  GOFLAGS=-mod=mod "$go_bin" test -c -trimpath -o "$out_dir/conformance-nosctp.test.tmp" sigs.k8s.io/network-policy-api/conformance) >&2
rm -rf "$variant"
mv "$out_dir/conformance-nosctp.test.tmp" "$out_dir/conformance-nosctp.test"
echo "build.sh: conformance-nosctp.test built in $((SECONDS - start)) s" >&2

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
