#pragma once
// The harness starts its children (family binaries, hdbench-probe, nvidia-smi, the plots) with
// the one child-with-deadline of hdb_host. These names are the harness's older spelling of it,
// kept until its callers name hdb/host/process.hpp themselves; no logic lives here.
#include "hdb/host/process.hpp"

namespace hdb {

using process_spec = child_spec;
using process_result = child_result;
using process_end = child_end;

[[nodiscard]] inline child_result run_process(const child_spec& spec, const std::function<void()>& on_tick = {}) {
  return run_with_deadline(spec, on_tick);
}

}  // namespace hdb
