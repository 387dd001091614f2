// All-gather: every rank ends with the concatenation of all ranks' S/n-byte inputs (S bytes).
// A ring forwards n-1 blocks of S/n per rank: bus factor (n-1)/n (nccl-tests doc/PERFORMANCE.md).
// The message size S is the output of one rank.
#include "collective.hpp"

namespace hdb::allreduce {

const collective_traits& all_gather_traits() {
  static const collective_traits traits{
      collective::all_gather,
      "all_gather",
      "ncclAllGather",
      [](int ranks) { return static_cast<double>(ranks - 1) / ranks; },
      [](std::uint64_t count, int ranks) { return count / static_cast<std::uint64_t>(ranks); },
      [](std::uint64_t count, int) { return count; },
      true,
  };
  return traits;
}

}  // namespace hdb::allreduce
