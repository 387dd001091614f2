#!/usr/bin/env bash
# The confirmation's holdout on a GPU node (docs/evidence.md): what a node's first minutes and a
# real fault look like to `./run_all.sh --verdict`.
#
#   tools/confirm_holdout.sh OUT boot     the run straight after the build on a bare machine, then once more
#   tools/confirm_holdout.sh OUT faults   a co-tenant copying over the link for the whole run, for its
#                                         first 10 s only, and steadily for 30 % of every 10 ms
#   tools/confirm_holdout.sh OUT faults whole first-10s
#                                         only those of the three (whole, first-10s, steady-30pc);
#                                         first-Ns copies for the run's first N seconds
#
# HDBENCH_REFERENCE_DIR=EMPTY_DIR grades against peaks only, as on a kind without a set.
# Each run's verdict files go to OUT/<scenario>.tgz, its console to OUT/<scenario>.log; OUT/summary.txt
# gets one line per run: scenario, exit status, wall seconds, check's summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: tools/confirm_holdout.sh OUT boot|faults [whole] [first-Ns] [steady-30pc]"
out=${1:?$usage}
mode=${2:?$usage}
shift 2
scenarios=${*:-whole first-10s steady-30pc}
mkdir -p "$out"

# A verdict run with the co-tenant copying all through it, stopped after it.
with_cotenant() {  # NAME pcie-copy-load arguments...
  local name=$1 pid
  shift
  "$load" "$@" >"$out/load-$name.log" 2>&1 &
  pid=$!
  sleep 1
  verdict_run "cotenant-$name"
  kill "$pid"; wait "$pid" 2>/dev/null
}

verdict_run() {  # NAME [run_all.sh arguments...]
  local name=$1 started status run_dir
  shift
  started=$(date +%s%N)
  ./run_all.sh --verdict "$@" >"$out/$name.log" 2>&1
  status=$?
  run_dir=$(sed -n 's/^hdbench: run //p' "$out/$name.log" | tail -n 1)
  # What a verdict is read from, not the figures or raw/ (hundreds of files): one archive a run.
  [ -n "$run_dir" ] && tar -czf "$out/$name.tgz" -C "$(dirname "$run_dir")" \
    "$(basename "$run_dir")"/{check.txt,check.json,meta.json,results.csv,report.md} 2>/dev/null
  printf '%s exit=%s wall=%ss %s\n' "$name" "$status" "$(( ($(date +%s%N) - started) / 1000000000 ))" \
    "$(tail -n 1 "$run_dir/check.txt" 2>/dev/null)" | tee -a "$out/summary.txt"
}

case "$mode" in
  boot)
    verdict_run first
    verdict_run second
    ;;
  faults)
    preset=${HDBENCH_PRESET:-native}
    cmake --build --preset "$preset" --target pcie-copy-load >"$out/build-load.log" 2>&1 || { echo "no pcie-copy-load" >&2; exit 2; }
    load=build/$preset/tests/pcie-copy-load
    for scenario in $scenarios; do
      case "$scenario" in
        whole) with_cotenant whole-run --seconds=600 ;;
        first-[0-9]*s)
          seconds=${scenario#first-}
          "$load" --seconds="${seconds%s}" >"$out/load-$scenario.log" 2>&1 &
          verdict_run "cotenant-$scenario"
          wait ;;
        steady-30pc) with_cotenant steady-30pc --seconds=600 --duty=0.3 --period-ms=10 ;;
        *) echo "confirm_holdout.sh: unknown scenario '$scenario' (whole, first-Ns, steady-30pc)" >&2; exit 2 ;;
      esac
      sleep 5
    done
    ;;
  *) echo "confirm_holdout.sh: unknown mode '$mode' (boot or faults)" >&2; exit 2 ;;
esac
