#pragma once
// The scheduling-mode cases: the parent's case bodies run one child process per mode; the child
// is this same binary started with --sched-child=MODE (see wakeup.cpp).
#include "hdb/family.hpp"
#include "hdb/options.hpp"

#include <optional>

namespace hdb::sync {

// family_spec::before_cuda: with --sched-child=MODE this process is a child; it measures, prints
// its report as one JSON line on stdout and exits with the returned code.
[[nodiscard]] std::optional<int> child_entry(const run_options& options, int argc, char** argv);

void register_wakeup_cases(const run_options& options, family_env& env, case_registry& registry);

}  // namespace hdb::sync
