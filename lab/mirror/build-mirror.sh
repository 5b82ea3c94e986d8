#!/bin/sh
# build-mirror.sh OUTDIR: the non-package artefacts an air-gapped site keeps on
# its own web server, as the lab serves them (docs/lab.md, the contract's
# "mirror" paths): flannel's and Calico's manifests and the GPU Operator's
# charts, both as a chart repository (index.yaml) and as archives `helm
# install` takes directly.
#
#   OUTDIR/mirror/kube-flannel.yml
#   OUTDIR/mirror/calico.yaml
#   OUTDIR/mirror/charts/index.yaml
#   OUTDIR/mirror/charts/gpu-operator-<version>.tgz
#
# The charts are stand-ins: Chart.yaml and a values.yaml, no templates (the
# lab's helm hands releases to its stand-in API server, which runs the
# operator's pods itself). The archives are byte-for-byte reproducible.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
kube=$here/../standins/kube-standin-common/root/usr/lib/gpuctl-lab/kube
out=$1/mirror
mkdir -p "$out/charts"
cp "$kube/manifests/kube-flannel.yml" "$out/kube-flannel.yml"
cp "$kube/manifests/calico.yaml" "$out/calico.yaml"

# The versions the helm stand-in's NGC catalog knows (helm.py, CATALOG).
versions="v24.9.0 v24.6.2 v24.3.0 v23.9.2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
entries=""
for v in $versions; do
  rm -rf "$work/gpu-operator"
  mkdir -p "$work/gpu-operator"
  # Chart.yaml as NVIDIA's chart names itself (apiVersion v2, version with a v).
  cat >"$work/gpu-operator/Chart.yaml" <<CHART
apiVersion: v2
appVersion: $v
description: NVIDIA GPU Operator creates/configures/manages GPUs atop Kubernetes
home: https://github.com/NVIDIA/gpu-operator
kubeVersion: '>= 1.16.0-0'
name: gpu-operator
version: $v
CHART
  cat >"$work/gpu-operator/values.yaml" <<'VALUES'
# gpuctl lab stand-in of the GPU Operator chart's values (the keys gpuctl sets).
driver:
  enabled: true
toolkit:
  enabled: true
VALUES
  tgz=$out/charts/gpu-operator-$v.tgz
  # As `helm package` lays it out: one top directory named after the chart.
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    -C "$work" -cf - gpu-operator | gzip -n -9 >"$tgz"
  digest=$(sha256sum "$tgz" | cut -d ' ' -f 1)
  entries="$entries  - apiVersion: v2
    appVersion: $v
    created: \"1970-01-01T00:00:00Z\"
    description: NVIDIA GPU Operator creates/configures/manages GPUs atop Kubernetes
    digest: $digest
    name: gpu-operator
    urls:
    - gpu-operator-$v.tgz
    version: $v
"
done
# helm's index.yaml layout (`helm repo index`): entries by chart name, each
# version's archive relative to the repository URL.
printf 'apiVersion: v1\nentries:\n  gpu-operator:\n%sgenerated: "1970-01-01T00:00:00Z"\n' \
  "$entries" >"$out/charts/index.yaml"
