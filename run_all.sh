#!/usr/bin/env bash
# The main job on a GPU node: build if needed, run every built family through `hdbench run`,
# draw the plots, write the report, print where everything is with the headline figures, then
# `hdbench check` the run (the node verdict). Exit: the run's status when it failed, else check's
# (0 PASS or WARN, 1 a FAIL, 2 bad input).
#   ./run_all.sh                 full suite (a few minutes)
#   ./run_all.sh --quick         short profile
#   ./run_all.sh --verdict       only what check grades and compare gates (no sweeps)
#   ./run_all.sh --families copy -- --benchmark_filter=pinned
# Arguments go to `hdbench run` unchanged. HDBENCH_PRESET picks the CMake preset (default
# `native`: code for this node's GPUs only; `release` builds the portable architecture list).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run_all.sh: no NVIDIA GPU found (nvidia-smi lists none); hdbench measures a GPU node and needs one" >&2
  exit 2
fi
# NVLink multicast (NVLS) can take a host's shared GPUs out of service: off in every process
# this starts, including the all-reduce workers.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

preset="${HDBENCH_PRESET:-native}"
mkdir -p build
log="build/$preset-build.log"
echo "run_all.sh: building (preset $preset)" >&2
if [ ! -f "build/$preset/CMakeCache.txt" ]; then
  cmake --preset "$preset" >"$log" 2>&1 || { cat "$log" >&2; echo "run_all.sh: configure failed" >&2; exit 2; }
fi
# Only what a run needs (the hdbench_suite target): the test binaries are the test command's job.
cmake --build --preset "$preset" --parallel --target hdbench_suite >"$log" 2>&1 || { tail -40 "$log" >&2; echo "run_all.sh: build failed (log: $log)" >&2; exit 2; }

hdbench="build/$preset/bin/hdbench"
run_dir_file="$(mktemp)"
trap 'rm -f "$run_dir_file"' EXIT
run_status=0
"$hdbench" run --run-dir-file "$run_dir_file" "$@" || run_status=$?
run_dir="$(cat "$run_dir_file")"
[ -n "$run_dir" ] || exit "$run_status"  # --help, or refused before a run directory existed

# The node verdict: every GPU's figures against the reference set of this node's kind (peaks
# only without one) and its links, clocks and neighbours. check writes the whole table to
# check.txt (and check.json) in the run directory; here the lines that are not PASS, beside a FAIL
# what changed against the set's machines, and the summary.
check_status=0
"$hdbench" check "$run_dir" >/dev/null || check_status=$?
if [ -f "$run_dir/check.txt" ]; then
  grep -E '^(FAIL|WARN) |^what changed: ' "$run_dir/check.txt" >&2 || true
  tail -n 1 "$run_dir/check.txt" >&2
  echo "run_all.sh: every check line in $run_dir/check.txt" >&2
else
  # check said why on its own line (a run where every case was skipped has nothing to grade).
  echo "run_all.sh: no verdict for $run_dir: see hdbench check's line above; the run's skipped cases say why in $run_dir/report.md" >&2
fi
if [ "$run_status" -ne 0 ]; then exit "$run_status"; fi
exit "$check_status"
