#!/usr/bin/env bash
# make k8s-bins: builds the control plane the Kubernetes tests and `fabric lab up --k8s` run, from the upstream Go
# modules pinned in tools/k8s-bins/*/go.mod, into a cache outside the repository keyed by those pins; reused
# when present. Prints the directory. CRDs are copied from the same modules' sources in the Go module cache.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
key="$(cd "$here" && cat build.sh */go.mod */go.sum */*/main.go 2>/dev/null | sha256sum | cut -c1-12)"
ver="$(sed -n 's/^\tk8s.io\/kubernetes \(v[^ ]*\).*/\1/p' "$here/core/go.mod")"
dir="${ROCE_FABRIC_K8S_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/roce-fabric/k8s-bins/k8s-$ver-$key}"
# --dir: only print where the binaries are (or would be); the tests use it to find them without building.
if [ "${1:-}" = "--dir" ] || [ -f "$dir/.complete" ]; then echo "$dir"; exit 0; fi
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "k8s-bins: no Go toolchain (go) on PATH" >&2; exit 1; }
mkdir -p "$dir/bin" "$dir/crds"
start=$(date +%s)
export GOFLAGS="-mod=mod -buildvcs=false -trimpath" CGO_ENABLED=0
# -ldflags -s -w: no symbol tables, a third of the size; the binaries are test tools, not for debugging.
# -X: the version variables Kubernetes' own build sets (hack/lib/version.sh kube::version::ldflags), so
# `kube-apiserver --version` says the pinned release instead of v0.0.0-master; the same for the MPI Operator
# (its Makefile's LDFLAGS). kwok and etcd take theirs from their module's build info.
mpiver="$(sed -n 's/^\tgithub.com\/kubeflow\/mpi-operator \(v[^ ]*\).*/\1/p' "$here/mpi-operator/go.mod")"
major="${ver#v}"; minor="${major#*.}"; major="${major%%.*}"; minor="${minor%%.*}"
kv="" && for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kv="$kv -X $pkg.gitVersion=$ver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
(cd "$here/core" && GOBIN="$dir/bin" go install -ldflags="-s -w$kv" tool &&
  go build -ldflags='-s -w' -o "$dir/bin/etcd" ./etcd) >&2
# The MPI Operator in a module of its own: v0.6.0 does not compile against Kubernetes 1.33's client-go
# (cache.DefaultWatchErrorHandler gained a context argument), so it keeps the 0.31 libraries it pins.
(cd "$here/mpi-operator" && GOBIN="$dir/bin" go install \
  -ldflags="-s -w -X github.com/kubeflow/mpi-operator/pkg/version.Version=$mpiver" tool) >&2
# Volcano's scheduler and controller manager in a module of their own: v1.10.0 (the one release the Go module
# proxy serves; 403 for the others tried on 2026-11-26) pins Kubernetes 1.30's libraries through its replaces.
# Binary names and -X as its Makefile's (vc-scheduler, vc-controller-manager; pkg/version.Version).
vcver="$(sed -n 's/^\tvolcano.sh\/volcano \(v[^ ]*\).*/\1/p' "$here/volcano/go.mod")"
(cd "$here/volcano" && for c in scheduler controller-manager; do
  go build -ldflags="-s -w -X volcano.sh/volcano/pkg/version.Version=$vcver" -o "$dir/bin/vc-$c" \
    "volcano.sh/volcano/cmd/$c"
done) >&2
mod="$(go env GOMODCACHE)"
vc="$(cd "$here/volcano" && go list -m -f '{{.Dir}}' volcano.sh/volcano)"
cp "$vc"/config/crd/volcano/bases/*.yaml "$dir/crds/"  # PodGroup, Queue, Command, Numatopology, Job
mpi="$(cd "$here/mpi-operator" && go list -m -f '{{.Dir}}' github.com/kubeflow/mpi-operator)"
cp "$mpi/manifests/base/kubeflow.org_mpijobs.yaml" "$dir/crds/"
kwok="$(cd "$here/core" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
mkdir -p "$dir/kwok-stages"  # kwok's "general" pod stages: Running then Ready, a Job's pod Succeeded after a delay
cp "$kwok"/kustomize/stage/pod/general/pod-*.yaml "$dir/kwok-stages/"
chmod -R u+w "$dir/crds" "$dir/kwok-stages"
echo "built in $(( $(date +%s) - start ))s (GOMODCACHE $mod)" > "$dir/.complete"
echo "k8s-bins: $(cat "$dir/.complete")" >&2
echo "$dir"
