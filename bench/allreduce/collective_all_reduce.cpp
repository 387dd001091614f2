// All-reduce (sum): every rank ends with the element-wise sum of all ranks' S-byte buffers.
// A ring does it as a reduce-scatter then an all-gather: each rank sends 2(n-1) blocks of S/n,
// hence the bus factor 2(n-1)/n (nccl-tests doc/PERFORMANCE.md). n = 1 is a local copy (factor 0:
// no bus traffic), so only its algbw means anything.
#include "collective.hpp"

namespace hdb::allreduce {

const collective_traits& all_reduce_traits() {
  static const collective_traits traits{
      collective::all_reduce,
      "all_reduce",
      "ncclAllReduce",
      [](int ranks) { return 2.0 * (ranks - 1) / ranks; },
      [](std::uint64_t count, int) { return count; },
      [](std::uint64_t count, int) { return count; },
      false,
  };
  return traits;
}

}  // namespace hdb::allreduce
