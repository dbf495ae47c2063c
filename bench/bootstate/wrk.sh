#!/usr/bin/env bash
# Runs wrk against the bare handler, memstore and boltstore, one after the
# other, each served by `bench/bootstate -serve MODE`.
# Usage: bash bench/bootstate/wrk.sh [duration] [connections] [systems]
# Every request is a first callback as long as wrk sends fewer requests than
# systems were registered; a row where it sent more is flagged WRAPPED (its
# tail were idempotent repeats) and must not be reported as first callbacks.
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${1:-5s} conns=${2:-32} systems=${3:-300000}
bin=$(mktemp -d)/bsbench
go build -o "$bin" ./bench/bootstate
for mode in bare memstore boltstore; do
  bodies=$(mktemp)
  out=$(mktemp)
  "$bin" -serve "$mode" -n "$systems" -bodies "$bodies" >"$out" &
  pid=$!
  for _ in $(seq 1200); do grep -q '^ready' "$out" && break; sleep 0.5; done
  addr=$(awk '/^ready/{print $2}' "$out")
  echo "== $mode: $systems systems registered, wrk -t2 -c$conns -d$dur on $addr"
  res=$(BODIES=$bodies THREADS=2 wrk -t2 -c"$conns" -d"$dur" --latency -s bench/bootstate/callbacks.lua "http://$addr/bootstate")
  echo "$res"
  sent=$(echo "$res" | awk '/requests in/{print $1}')
  if [ "$mode" != bare ] && [ "$sent" -gt "$systems" ]; then
    echo "WRAPPED: $sent requests > $systems systems; rerun with more systems or a shorter duration"
  fi
  kill "$pid"; wait "$pid" || true
  rm -f "$bodies" "$out"
done
