#!/usr/bin/env bash
# Triage cost on a remote cluster: brings up the mesh lab, applies the
# `healthy` scenario, puts a delay proxy (lab/bench/delay.go) in front of the
# API server and measures, at each round-trip time, a full triage with a
# caller as `check --metrics-window 0` runs it (in-process, through
# triage.Live and triage.Open), the meshtriage binary with and without its
# metrics window, and `istioctl proxy-config cluster POD` and
# `istioctl x describe pod POD` through the same proxy.
#
#   lab/bench/latency.sh                       # 0, 50, 100 ms; 5 runs each
#   RTTS=0,100 RUNS=3 lab/bench/latency.sh
#   ISTIOCTL=none lab/bench/latency.sh         # without istioctl
#
# Needs etcd and the lab's kube-apiserver (built on first use) and builds
# istioctl once (cached). Figures go to stdout as Markdown, progress to
# stderr, the raw runs to $OUT (default latency.json in a temp dir).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/meshtriage" ./cmd/meshtriage
go build -o "$work/latency" ./lab/bench/latency
case "${ISTIOCTL:-}" in
none) istioctl="" ;;
"") istioctl=$(go run ./lab/bench/istioctlbin) ;;
*) istioctl=$ISTIOCTL ;;
esac
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$work/latency" -meshtriage "$work/meshtriage" -istioctl "$istioctl" \
  -rtts "${RTTS:-0,50,100}" -runs "${RUNS:-5}" -timeline -out "${OUT:-$work/latency.json}"
