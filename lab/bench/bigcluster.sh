#!/usr/bin/env bash
# Triage cost on a big cluster: brings up the mesh lab, generates 1,000 then
# 10,000 pods (50 namespaces, 5 pods per service, EndpointSlices,
# DestinationRules, VirtualServices, PeerAuthentications), applies the
# `healthy` scenario as the target and measures `meshtriage check` (and
# `istioctl analyze` when ISTIOCTL=1 or ISTIOCTL=PATH) at each size.
#
#   lab/bench/bigcluster.sh                      # meshtriage only
#   ISTIOCTL=1 lab/bench/bigcluster.sh           # also istioctl (built once, cached in lab/.cache)
#   SIZES=1000 RUNS=5 lab/bench/bigcluster.sh
#
# Needs etcd (apt-get install -y etcd-server) and the lab's kube-apiserver
# (built on first use). Figures go to stdout as Markdown, progress to stderr,
# and the raw runs to $OUT (default bigcluster.json in a temp dir).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/meshtriage" ./cmd/meshtriage
go build -o "$work/bigcluster" ./lab/bench/bigcluster
istioctl=""
case "${ISTIOCTL:-}" in
"") ;;
1) istioctl=$(go run ./lab/bench/istioctlbin) ;;
*) istioctl=$ISTIOCTL ;;
esac
# ISTIOCTL=PATH with ISTIOCTL_WAIT=20m: PATH is still being built elsewhere;
# the lab is set up meanwhile and measuring waits for it.
out=${OUT:-$work/bigcluster.json}
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$work/bigcluster" -meshtriage "$work/meshtriage" -istioctl "$istioctl" \
  -wait-istioctl "${ISTIOCTL_WAIT:-0s}" -sizes "${SIZES:-1000,10000}" -runs "${RUNS:-3}" -out "$out"
if [ -z "${OUT:-}" ]; then cat "$out" >&2; fi
