#pragma once
// What step i of the sync-trap loop adds to its accumulator, on host and device alike.
#include "hdb/pattern.hpp"

#include <cstdint>

namespace hdb::sync {

// Non-zero and position-dependent, so a read-back that returns a stale or skipped value is caught.
HDB_HOST_DEVICE constexpr std::uint32_t step_value(std::uint64_t step) {
  return static_cast<std::uint32_t>(pattern_word(step, 0x51C7u));
}

}  // namespace hdb::sync
