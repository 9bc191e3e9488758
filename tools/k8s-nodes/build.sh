#!/usr/bin/env bash
# make k8s-nodes: builds what the lab's real nodes run besides Debian's containerd, runc and CNI plugins
# (`fabric lab up --k8s --real-nodes N`): the kubelet from the same k8s.io/kubernetes release as the control plane
# (tools/k8s-bins/core/go.mod), multus (thin plugin) and whereabouts (IPAM) from the Go module proxy, with
# whereabouts' CRDs. Its own cache directory, keyed by these pins, so the control plane's key does not change.
# Prints the directory; --dir only prints it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
key="$(cd "$here" && cat build.sh */go.mod */go.sum 2>/dev/null | sha256sum | cut -c1-12)"
ver="$(sed -n 's/^\tk8s.io\/kubernetes \(v[^ ]*\).*/\1/p' "$here/kubelet/go.mod")"
dir="${ROCE_FABRIC_K8S_NODES:-${XDG_CACHE_HOME:-$HOME/.cache}/roce-fabric/k8s-nodes/k8s-$ver-$key}"
if [ "${1:-}" = "--dir" ] || [ -f "$dir/.complete" ]; then echo "$dir"; exit 0; fi
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "k8s-nodes: no Go toolchain (go) on PATH" >&2; exit 1; }
mkdir -p "$dir/bin" "$dir/crds"
start=$(date +%s)
export GOFLAGS="-mod=mod -buildvcs=false -trimpath" CGO_ENABLED=0
major="${ver#v}"; minor="${major#*.}"; major="${major%%.*}"; minor="${minor%%.*}"
kv="" && for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kv="$kv -X $pkg.gitVersion=$ver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
(cd "$here/kubelet" && GOBIN="$dir/bin" go install -ldflags="-s -w$kv" tool) >&2
(cd "$here/whereabouts" && go build -ldflags='-s -w' -o "$dir/bin/whereabouts" \
  github.com/k8snetworkplumbingwg/whereabouts/cmd) >&2
multus="$(sed -n 's/^require gopkg.in\/k8snetworkplumbingwg\/multus-cni.v4 \(v[^ ]*\).*/\1/p' "$here/multus/go.mod")"
(cd "$here/multus" && GOBIN="$dir/bin" go install \
  -ldflags="-s -w -X gopkg.in/k8snetworkplumbingwg/multus-cni.v4/pkg/multus.version=$multus" tool) >&2
wa="$(cd "$here/whereabouts" && go list -m -f '{{.Dir}}' github.com/k8snetworkplumbingwg/whereabouts)"
cp "$wa"/doc/crds/whereabouts.cni.cncf.io_{ippools,overlappingrangeipreservations}.yaml "$dir/crds/"
chmod -R u+w "$dir/crds"
echo "built in $(( $(date +%s) - start ))s (GOMODCACHE $(go env GOMODCACHE))" > "$dir/.complete"
echo "k8s-nodes: $(cat "$dir/.complete")" >&2
echo "$dir"
