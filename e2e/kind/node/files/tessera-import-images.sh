#!/bin/bash
# Imports every /kind/images/*.tar (docker-archive, `podman save --format docker-archive`)
# into containerd's k8s.io namespace, the one the CRI plugin serves kubelet from. Waits for
# containerd's socket first. Idempotent: importing an image already present only re-tags it.
set -euo pipefail
for _ in $(seq 1 120); do
  ctr version >/dev/null 2>&1 && break
  sleep 0.5
done
shopt -s nullglob
for archive in /kind/images/*.tar; do
  ctr --namespace=k8s.io images import --all-platforms "$archive"
done
