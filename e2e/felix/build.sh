#!/usr/bin/env bash
# Builds the Felix program the Felix differential runs (README.md here): calico-felix from the
# Calico version go.mod pins, into
#   ${TESSERA_CACHE:-$HOME/.cache/tessera}/felix/<digest of go.mod, go.sum>/calico-felix
# beside a copy of that version's own crd.projectcalico.org/v1 CRDs (crds/, from the same module
# zip), and prints that directory on its last line (progress goes to stderr). Does nothing when
# it is already there. Modules come from the Go module proxy into the module cache
# e2e/controlplane/build.sh and bench/felix/build.sh share. No product code is Go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
digest="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)"
out_dir="$cache/felix/$digest"

if [[ -x "$out_dir/calico-felix" && -d "$out_dir/crds" ]]; then
  echo "$out_dir"
  exit 0
fi

mkdir -p "$cache/felix"
exec 9>"$cache/felix/.build.lock"
flock 9
if [[ -x "$out_dir/calico-felix" && -d "$out_dir/crds" ]]; then
  echo "$out_dir"
  exit 0
fi

source "$here/../go-env.sh"
# go.sum holds every module the Linux build needs; -mod=readonly fails loudly instead of editing
# it. (`go mod tidy` cannot run here: it also resolves Felix's Windows-only imports, which the
# proxy refuses.)
export GOFLAGS=-mod=readonly

echo "build.sh: $("$go_bin" version); building calico-felix" >&2
start=$SECONDS
mkdir -p "$out_dir"
(cd "$here" && "$go_bin" build -trimpath -o "$out_dir/calico-felix.tmp" github.com/projectcalico/calico/felix/cmd/calico-felix) >&2
module_dir="$(cd "$here" && "$go_bin" list -m -f '{{.Dir}}' github.com/projectcalico/calico)"
rm -rf "$out_dir/crds.tmp"
mkdir -p "$out_dir/crds.tmp"
cp "$module_dir"/libcalico-go/config/crd/*.yaml "$out_dir/crds.tmp/"
chmod -R u+w "$out_dir/crds.tmp"
mv "$out_dir/crds.tmp" "$out_dir/crds"
mv "$out_dir/calico-felix.tmp" "$out_dir/calico-felix"
echo "build.sh: built in $((SECONDS - start)) s" >&2
echo "$out_dir"
