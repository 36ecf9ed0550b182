# Sourced (after go-env.sh) by the scripts that build Kubernetes commands from the Go module
# proxy (e2e/controlplane/build.sh, e2e/kind/build-kube.sh).
#
#   kube_staging_replaces <upstream go.mod> <minor> <patch> <work dir>
#
# fills the array `staging_replaces` with one `k8s.io/<m> => k8s.io/<m> v0.<minor>.<p>` line per
# staging module of that go.mod (the modules k8s.io/kubernetes replaces with
# ./staging/src/k8s.io/<m>, which a dependent module must pin itself; see build.sh).
#
# Each staging module is tagged v0.X.Y for Kubernetes v1.X.Y, but the module proxy refuses some
# of those versions (403 "This module version is not available"; seen: k8s.io/endpointslice
# v0.32.13, which kube-controller-manager imports). Each module is checked with
# `go mod download -json`; a refused one is replaced by the newest earlier patch release the
# proxy serves, and the substitution is printed. Staging modules of one minor release share
# their API, and `go build` fails loudly if a substitute does not compile. sample-* and
# code-generator are never built, so they are not checked.
kube_staging_replaces() {
  local upstream_gomod="$1" minor="$2" patch="$3" work="$4" m p
  local -a staging
  mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]*=>[[:space:]]*\./staging/src/k8s\.io/.*#\1#p' "$upstream_gomod" | sort -u)
  if (( ${#staging[@]} < 20 )); then
    echo "$(basename "$0"): found only ${#staging[@]} staging modules in $upstream_gomod; refusing to guess" >&2
    return 1
  fi
  staging_replaces=()
  for m in "${staging[@]}"; do
    case "$m" in k8s.io/sample-* | k8s.io/code-generator) staging_replaces+=("$m => $m v0.$minor.$patch"); continue ;; esac
    p=$patch
    while (( p >= 0 )) && ! _kube_staging_served "$work" "$m" "v0.$minor.$p"; do p=$((p - 1)); done
    if (( p < 0 )); then
      echo "$(basename "$0"): the module proxy serves no $m v0.$minor.x at or below v0.$minor.$patch" >&2
      return 1
    fi
    (( p == patch )) || echo "$(basename "$0"): $m v0.$minor.$patch is refused by the module proxy; using v0.$minor.$p" >&2
    staging_replaces+=("$m => $m v0.$minor.$p")
  done
}

# _kube_staging_served <work dir> <module> <version>: true when the proxy serves that version's zip.
_kube_staging_served() {
  local out
  out="$(cd "$1" && "$go_bin" mod download -json "$2@$3" 2>/dev/null || true)"
  ! printf '%s\n' "$out" | grep -q '"Error"'
}
