#!/usr/bin/env bash
# The verdict run against the full run, measured on this node in one call (docs/evidence.md):
#   tools/verdict_benchmark.sh [OUT_DIR [KIND...]]
# runs ./run_all.sh once per KIND (default all three), each judged against the reference set of this node's kind:
#   full       the default run (every sweep, fixed repetitions)
#   verdict    --verdict (only what check grades and compare gates, repetitions by precision)
#   precision  the default run with --stopping=precision (does the stopping rule move the full run?)
# then prints (tools/verdict_benchmark.py) each family's time in each, their ratio, each figure's
# detectable change and grade in each, and the repetitions the stopping rule took. A benchmark, not
# a test: it judges nothing and exits 0 once the three runs finished (a FAIL is in its table).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/verdict-benchmark-$(date -u +%Y%m%dT%H%M%SZ)}"
shift || true
kinds=("$@")
[ "${#kinds[@]}" -gt 0 ] || kinds=(full verdict precision)
mkdir -p "$out"
for kind in "${kinds[@]}"; do
  case "$kind" in
    full) args=() ;;
    verdict) args=(--verdict) ;;
    precision) args=(--stopping=precision) ;;
    *) echo "verdict_benchmark: unknown run kind '$kind' (full, verdict or precision)" >&2; exit 2 ;;
  esac
  started=$EPOCHREALTIME
  status=0
  ./run_all.sh --out "$out/$kind" "${args[@]}" >"$out/$kind.log" 2>&1 || status=$?
  finished=$EPOCHREALTIME
  run_dir=$(find "$out/$kind" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  if [ -z "$run_dir" ]; then
    echo "verdict_benchmark: the $kind run made no run directory (exit $status); its log: $out/$kind.log" >&2
    tail -n 20 "$out/$kind.log" >&2
    exit 1
  fi
  # compare against the set check judged by (its check.json names it): quiet on a healthy node.
  set_dir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reference"]["dir"] or "")' "$run_dir/check.json" 2>/dev/null || true)
  if [ -n "$set_dir" ] && [ -d "$set_dir" ]; then
    "build/${HDBENCH_PRESET:-native}/bin/hdbench" compare "$set_dir" "$run_dir" >"$run_dir/compare.txt" 2>&1 || true
  fi
  echo "{\"kind\": \"$kind\", \"run_dir\": \"$run_dir\", \"exit\": $status, \"started\": $started, \"finished\": $finished}" >>"$out/runs.jsonl"
done
python3 tools/verdict_benchmark.py --runs "$out/runs.jsonl" | tee "$out/verdict-benchmark.md"
