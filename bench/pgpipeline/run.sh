#!/usr/bin/env bash
# What a group commit's writes cost PostgreSQL on this machine, four ways
# (docs/storage.md, "Pipelined group commit" and "Writes over arrays";
# docs/benchmarks.md). pgbench runs WRITES compare-and-swap-shaped updates
# of records (of 10,000, 600 bytes each) per transaction, one client, in a
# scratch schema it drops at the end, alternating:
#   plain   sqlstore's per-write statement (the revision counter moved by
#           each), one round trip each
#   pipe    the same statements sent together (\startpipeline)
#   once    pipelined, the revisions taken by one statement first, then a
#           plain UPDATE per write
#   arrays  the revisions taken once, then one UPDATE over unnest() of the
#           WRITES keys (what sqlstore sends on pgx since 21320f8; the
#           values are made on the server here, so it sends less than
#           sqlstore does)
#
#   bash bench/pgpipeline/run.sh                # 3 rounds of 8 s, 50 writes
#   WRITES=300 ROUNDS=5 SECONDS_PER_RUN=10 DSN=postgres://... bash bench/pgpipeline/run.sh
set -euo pipefail
dsn=${DSN:-postgres://bmckit:bmckit@127.0.0.1:5432/bmckit?sslmode=disable}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-8}
n=${WRITES:-50}
tmp=$(mktemp -d)
trap 'psql -q "$dsn" -c "DROP SCHEMA IF EXISTS bench_pgpipeline CASCADE" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
psql -q "$dsn" <<'SQL' >/dev/null
DROP SCHEMA IF EXISTS bench_pgpipeline CASCADE; CREATE SCHEMA bench_pgpipeline;
CREATE TABLE bench_pgpipeline.meta(id int PRIMARY KEY, revision bigint NOT NULL, compacted bigint NOT NULL);
INSERT INTO bench_pgpipeline.meta VALUES (1, 0, 0);
CREATE TABLE bench_pgpipeline.kv(key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, revision bigint NOT NULL, deleted bool NOT NULL);
INSERT INTO bench_pgpipeline.kv SELECT 'job/' || i, repeat('x', 600)::bytea, 0, false FROM generate_series(1, 10000) i;
UPDATE bench_pgpipeline.kv SET revision = -revision - substr(key, 5)::bigint;
CREATE UNIQUE INDEX ON bench_pgpipeline.kv(revision);
SQL
stmt="WITH r AS (UPDATE bench_pgpipeline.meta SET revision = revision + 1 WHERE id = 1 AND EXISTS (SELECT 1 FROM bench_pgpipeline.kv WHERE key = 'job/' || :k AND NOT deleted) RETURNING revision) UPDATE bench_pgpipeline.kv SET value = repeat('y', 600)::bytea, revision = (SELECT revision FROM r) WHERE key = 'job/' || :k AND NOT deleted AND EXISTS (SELECT 1 FROM r) RETURNING revision;"
once="UPDATE bench_pgpipeline.kv SET value = repeat('y', 600)::bytea, revision = (SELECT revision FROM bench_pgpipeline.meta WHERE id = 1) - :off WHERE key = 'job/' || :k AND NOT deleted RETURNING revision;"
take="UPDATE bench_pgpipeline.meta SET revision = revision + $n WHERE id = 1;"
for mode in plain pipe once arrays; do
  {
    [ "$mode" != plain ] && echo '\startpipeline'
    echo 'BEGIN;'
    case $mode in
    plain|pipe) for _ in $(seq 1 "$n"); do echo '\set k random(1, 10000)'; echo "$stmt"; done ;;
    once)
      echo "$take"
      # distinct keys: a random start, then a stride
      echo '\set s random(1, 10000)'
      for i in $(seq 1 "$n"); do echo "\\set k 1 + (:s + $((i * 7))) % 10000"; echo "\\set off $((n - i))"; echo "$once"; done ;;
    arrays)
      echo "$take"
      echo '\set s random(0, 9999)'
      echo "UPDATE bench_pgpipeline.kv AS t SET value = repeat('y', 600)::bytea, revision = (SELECT revision FROM bench_pgpipeline.meta WHERE id = 1) - u.off FROM unnest(array(SELECT 'job/' || (1 + (:s + g * 7) % 10000) FROM generate_series(1, $n) g), array(SELECT $n - g FROM generate_series(1, $n) g)::int8[]) AS u(key, off) WHERE t.key = u.key COLLATE \"C\" AND NOT t.deleted RETURNING t.key, t.revision;" ;;
    esac
    echo 'COMMIT;'
    [ "$mode" != plain ] && echo '\endpipeline'
  } >"$tmp/$mode.sql"
done
echo "| round | mode | transactions/s | writes/s ($n per transaction) | load average |"
echo "|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for mode in plain pipe once arrays; do
    tps=$(pgbench -n -M prepared -c 1 -T "$secs" -f "$tmp/$mode.sql" "$dsn" 2>/dev/null | awk '/^tps/ {print $3}')
    printf '| %d | %s | %.0f | %.0f | %s |\n' "$r" "$mode" "$tps" "$(awk -v t="$tps" -v n="$n" 'BEGIN {print t * n}')" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
