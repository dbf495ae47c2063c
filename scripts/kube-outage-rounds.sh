#!/usr/bin/env bash
# Runs many rounds of the tests that show the Kubernetes path under a
# misbehaving control plane (issue 33, contrib/kubernetes/controller) and
# prints a table per test:
#   - TestAPIServerOutageOnRealAPIServer, subtests leader-election and
#     no-leader-election: two replica processes, 20 netboot jobs on 20
#     simulated BMCs (power changes 1-11 s late, 503 to 30% of the
#     state-changing requests), the kube-apiserver SIGKILLed and restarted
#     mid-run, down 7 s and 30 s in turn; 2 jobs deleted mid-run in rounds
#     1, 4, 5, 8, 9, ... (index 0 or 3 modulo 4);
#   - TestLeaderKillDefaultsOnRealAPIServer: two replica processes with
#     leader election and the kit's defaults, the leader SIGKILLed mid-run.
#
# Usage, from the repository root (the binaries must be built:
# bash scripts/kube-binaries.sh):
#
#   bash scripts/kube-outage-rounds.sh                 # 20 rounds of each
#   ROUNDS=5 bash scripts/kube-outage-rounds.sh        # 5 rounds of each
#   ONLY=outage bash scripts/kube-outage-rounds.sh     # or ONLY=leaderkill
#   BMCKIT_OUTAGE_DOWN=30s BMCKIT_OUTAGE_SEED=42 bash scripts/kube-outage-rounds.sh
#
# Every BMCKIT_OUTAGE_* and BMCKIT_LEADERKILL_* variable reaches the tests
# (see the top of contrib/kubernetes/controller/outage_test.go and
# leaderkill_test.go); RACE=0 runs without -race. The full go test output
# goes to $LOG (default: a file under ${TMPDIR:-/tmp}, named at the end);
# the tables come from its OUTAGE-ROUND and LEADERKILL-ROUND lines. About
# 1-1.5 minutes per round on two cores. Exits 1 when a round failed.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-20}
only=${ONLY:-}
log=${LOG:-$(mktemp "${TMPDIR:-/tmp}/kube-outage-rounds.XXXXXX")}
race=-race
[ "${RACE:-1}" = 0 ] && race=

if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
  if ! KUBEBUILDER_ASSETS=$(bash "$root/scripts/kube-binaries.sh" --cached); then
    echo "kube-outage-rounds: no kube-apiserver and etcd: build them with bash scripts/kube-binaries.sh" >&2
    exit 2
  fi
fi
export KUBEBUILDER_ASSETS

tests=()
[ "$only" != leaderkill ] && tests+=("^TestAPIServerOutageOnRealAPIServer$")
[ "$only" != outage ] && tests+=("^TestLeaderKillDefaultsOnRealAPIServer$")
run=$(IFS='|'; echo "${tests[*]}")

echo "kube-outage-rounds: $rounds rounds of $run; log in $log" >&2
start=$(date +%s)
(
  cd "$root/contrib/kubernetes" &&
    BMCKIT_OUTAGE_ROUNDS=${BMCKIT_OUTAGE_ROUNDS:-$rounds} BMCKIT_LEADERKILL_ROUNDS=${BMCKIT_LEADERKILL_ROUNDS:-$rounds} \
      GOWORK=off go test $race -count=1 -timeout 0 -v -run "$run" ./controller/
) >"$log" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))

# key=value fields of a line, as awk variables f["key"].
parse='function parse(line,   n, i, kv, a) { delete f; n = split(line, a, " "); for (i = 2; i <= n; i++) { split(a[i], kv, "="); f[kv[1]] = substr(a[i], length(kv[1]) + 2) } }'

if grep -q '^OUTAGE-ROUND ' "$log"; then
  echo
  echo "TestAPIServerOutageOnRealAPIServer (per round)"
  grep '^OUTAGE-ROUND ' "$log" | awk "$parse"'
    BEGIN { printf "%-19s %5s %5s %7s %4s %4s %9s %7s %-10s %4s %6s %5s %5s %4s %6s %6s %6s %5s %7s %s\n",
      "mode", "round", "down", "outage", "kill", "del", "conflicts", "changes", "per_job", "off", "failed", "unfin", "locks", "rest", "logins", "pairs", "unused", "503s", "time", "result" }
    { parse($0)
      printf "%-19s %5s %5s %7s %4s %4s %9s %7s %-10s %4s %6s %5s %5s %4s %6s %6s %6s %5s %7s %s\n",
        f["mode"], f["round"], f["down"], f["outage"], f["kill_after"], f["deleted"], f["conflicts"], f["changes"], f["per_job"],
        f["jobs_off"], f["failed"], f["unfinished"], f["locks_left"], f["restarts"], f["logins"], f["login_pairs"], f["unused_logins"],
        f["faults503"], f["duration"], f["result"] }'
  echo
  echo "TestAPIServerOutageOnRealAPIServer (summary by mode and downtime)"
  printf "%-19s %5s %6s %6s %13s %13s %8s %6s %6s %7s %6s %8s\n" mode down rounds passed conflicts/avg conflicts/max jobs_off failed unfin locks unused restarts
  grep '^OUTAGE-ROUND ' "$log" | awk "$parse"'
    { parse($0); k = f["mode"] " " f["down"]; n[k]++; if (f["result"] == "PASS") pass[k]++
      c = f["conflicts"] + 0; cs[k] = cs[k] " " c; if (!(k in cmax) || c > cmax[k]) cmax[k] = c; csum[k] += c
      off[k] += f["jobs_off"]; locks[k] += f["locks_left"]; unfin[k] += f["unfinished"]; failed[k] += f["failed"]; unused[k] += f["unused_logins"]; rest[k] += f["restarts"] }
    END { for (k in n) { split(k, p, " "); printf "%-19s %5s %6d %6d %13.1f %13d %8d %6d %6d %7d %6d %8d\n", p[1], p[2], n[k], pass[k], csum[k] / n[k], cmax[k], off[k], failed[k], unfin[k], locks[k], unused[k], rest[k] } }' | sort
fi

if grep -q '^LEADERKILL-ROUND ' "$log"; then
  echo
  echo "TestLeaderKillDefaultsOnRealAPIServer (per round)"
  grep '^LEADERKILL-ROUND ' "$log" | awk "$parse"'
    BEGIN { printf "%5s %4s %7s %9s %9s %13s %10s %9s %7s %4s %5s %5s %7s %s\n", "round", "kill", "killed", "handover", "takeover", "job_median", "job_max", "succeeded", "timeout", "off", "unfin", "locks", "time", "result" }
    { parse($0)
      printf "%5s %4s %7s %9s %9s %13s %10s %9s %7s %4s %5s %5s %7s %s\n", f["round"], f["kill_after"], f["killed"], f["le_handover"], f["takeover"],
        f["per_job_takeover_median"], f["per_job_takeover_max"], f["succeeded"], f["timed_out"], f["jobs_off"], f["unfinished"], f["locks_left"], f["duration"], f["result"] }'
fi

echo
echo "go test exit status $rc after ${elapsed}s; full log: $log"
if grep -q '^--- FAIL' "$log" || [ $rc -ne 0 ]; then
  echo "failures (first lines of each):"
  grep -E '^\s*--- FAIL' "$log" | head -40
  exit 1
fi
