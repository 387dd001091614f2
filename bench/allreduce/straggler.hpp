#pragma once
// The straggler case's figures from one repetition's per-rank times (host-only, unit-tested).
//
// Every rank times its batch from its own start event to the batch's end. The late rank records
// its start before its first delay kernel, i.e. when it "arrived", so every rank's figure is the
// time the job lost on that rank: with one rank d µs late, each rises by about d (the collective
// cannot finish before its slowest member joined). What a profiler shows per rank is different:
// the time inside the collective, which is longest on the punctual ranks (they wait there) and
// shortest on the late one. The spread of that is the slowest/fastest ratio.
#include <array>
#include <vector>

namespace hdb::allreduce {

struct straggler_figures {
  double rank_time_us = 0;           // this rank: start event to the collective's end, per collective
  double time_in_collective_us = 0;  // the same less the delay kernel (late rank only): time in NCCL
  double delay_us = 0;               // the late rank's delay kernel, measured, per collective
  double slowest_fastest = 0;        // max over ranks / min over ranks of time_in_collective_us
};

// `times[r]` is rank r's rank_reply::times_us of the straggler command ([0] its time per
// collective, [1] its delay kernel's, 0 on punctual ranks). Throws std::invalid_argument when a
// rank is missing or a time is not positive (nothing to divide by).
[[nodiscard]] straggler_figures straggler_row(const std::vector<std::array<double, 5>>& times, int late_rank, int rank);

}  // namespace hdb::allreduce
