#!/usr/bin/env bash
# The main job on a GPU node: build if needed, run every built family through `hdbench run`,
# draw the plots, write the report, and print where everything is with the headline figures.
#   ./run_all.sh                 full suite (a few minutes)
#   ./run_all.sh --quick         short profile
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
cmake --build --preset "$preset" --parallel >"$log" 2>&1 || { tail -40 "$log" >&2; echo "run_all.sh: build failed (log: $log)" >&2; exit 2; }

exec "build/$preset/bin/hdbench" run "$@"
