#!/usr/bin/env bash
# Runs wrk against the bare handler, memstore and boltstore, one after the
# other, each served by `go run ./bench/bootstate -serve MODE`.
# Usage: bash bench/bootstate/wrk.sh [duration] [connections] [systems]
# Every request is a first callback as long as wrk sends fewer requests than
# systems registered; the script prints both counts so a run that wrapped
# around into repeats shows.
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${1:-10s} conns=${2:-32} systems=${3:-200000}
bin=$(mktemp -d)/bsbench
go build -o "$bin" ./bench/bootstate
for mode in bare memstore boltstore; do
  n=$systems
  [ "$mode" = boltstore ] && n=$(( systems < 20000 ? systems : 20000 ))
  bodies=$(mktemp)
  out=$(mktemp)
  "$bin" -serve "$mode" -n "$n" -bodies "$bodies" >"$out" &
  pid=$!
  for _ in $(seq 600); do grep -q '^ready' "$out" && break; sleep 0.5; done
  addr=$(awk '/^ready/{print $2}' "$out")
  echo "== $mode: $n systems registered, wrk -t2 -c$conns -d$dur on $addr"
  BODIES=$bodies THREADS=2 wrk -t2 -c"$conns" -d"$dur" --latency -s bench/bootstate/callbacks.lua "http://$addr/bootstate"
  kill "$pid"; wait "$pid" || true
  rm -f "$bodies" "$out"
done
