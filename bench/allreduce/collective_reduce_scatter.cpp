// Reduce-scatter (sum): rank r ends with block r (S/n bytes) of the element-wise sum of all ranks'
// S-byte inputs. A ring sends n-1 blocks of S/n per rank: bus factor (n-1)/n (nccl-tests
// doc/PERFORMANCE.md). The message size S is the input of one rank.
#include "collective.hpp"

namespace hdb::allreduce {

const collective_traits& reduce_scatter_traits() {
  static const collective_traits traits{
      collective::reduce_scatter,
      "reduce_scatter",
      "ncclReduceScatter",
      [](int ranks) { return static_cast<double>(ranks - 1) / ranks; },
      [](std::uint64_t count, int) { return count; },
      [](std::uint64_t count, int ranks) { return count / static_cast<std::uint64_t>(ranks); },
      true,
  };
  return traits;
}

}  // namespace hdb::allreduce
