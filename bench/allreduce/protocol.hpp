#pragma once
// What the driver (rank 0's side, the process that writes the JSON) and the ranks say to each
// other. Both are fixed-size, trivially copyable records, so the same bytes travel over a local
// socket or through MPI_Bcast / MPI_Gather; every rank runs the same binary, so layout agrees.
//
// A case is a short conversation, the same on every transport:
//   connect (when the ranks have no communicator of n yet) -> prepare (allocate, fill; every rank
//   says ok, skip or fail, and nobody enters a collective unless all said ok) -> verify (one
//   collective, checked element by element) -> run, overlap or straggler (one per repetition) -> release.
// Ranks with index >= n answer `idle` and take no part.
#include "types.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace hdb::allreduce {

inline constexpr std::size_t unique_id_bytes = 128;  // NCCL_UNIQUE_ID_BYTES
using unique_id = std::array<unsigned char, unique_id_bytes>;

enum class command_kind : std::uint32_t {
  connect,  // create the communicator of `ranks` ranks from `id` (replacing any of that size)
  prepare,  // allocate and fill this case's buffers; ok, skip (with the reason) or fail
  verify,   // one collective, then count output elements that differ from the expected values
  run,      // `iterations` collectives timed between CUDA events, after a warm-up (see `launch`)
  overlap,  // communication alone, compute alone, both at once (see rank_reply::times_us)
  // `iterations` collectives after a warm-up, rank `straggler_rank` enqueueing a device-side wait of
  // `delay_ns` before each one (nccl_executor.cpp says what the events bracket)
  straggler,
  release,  // free this case's buffers
  reset,    // abort every communicator and free everything (after a failure)
  quit,
};

struct command {
  command_kind kind = command_kind::quit;
  collective op = collective::all_reduce;
  data_type type = data_type::float32;
  std::uint32_t in_place = 0;
  launch_method launch = launch_method::graph;  // run only: how the timed batch is issued
  std::int32_t ranks = 1;
  std::int32_t warmup = 0;
  std::int32_t iterations = 0;
  std::int32_t straggler_rank = -1;  // straggler only: the rank that enters each collective late
  std::uint32_t unused_padding = 0;
  std::uint64_t delay_ns = 0;       // straggler only: how late
  std::uint64_t count = 0;          // message elements (collective_traits gives each rank's share)
  std::int64_t wait_limit_ms = 0;   // a rank gives up on a collective after this and aborts it
  unique_id id{};                   // connect only
};

enum class reply_status : std::uint32_t { ok, idle, skip, fail };

struct rank_reply {
  reply_status status = reply_status::ok;
  std::int32_t rank = -1;
  std::int32_t device = -1;
  std::uint32_t unused_padding = 0;
  // connect: fingerprint of the unique id this rank joined with (the driver checks they agree).
  std::uint64_t token = 0;
  // verify: output elements that differ from the expected value, and the first one's index.
  std::uint64_t wrong = 0;
  std::uint64_t first_wrong = 0;
  // run: [0] µs per collective (this rank's events). overlap: [0] communication alone, [1] compute
  // alone, [2] both at once (start to the later end), [3] communication's end and [4] compute's end
  // in the joint phase, all in µs for the whole batch. straggler: [0] µs per collective from this
  // rank's start event (recorded before its delay, if it is the late rank) to the batch's end, [1] µs
  // per collective of the delay kernel itself (the late rank only; 0 elsewhere).
  std::array<double, 5> times_us{};
  std::array<char, 480> reason{};  // skip / fail: why, NUL-terminated
};

static_assert(std::is_trivially_copyable_v<command>);
static_assert(std::is_trivially_copyable_v<rank_reply>);

[[nodiscard]] std::string_view to_string(command_kind kind);
[[nodiscard]] std::string_view to_string(reply_status status);
// FNV-1a of the id: equal on every rank that joined the same communicator.
[[nodiscard]] std::uint64_t fingerprint(const unique_id& id);

void set_reason(rank_reply& reply, std::string_view text);
[[nodiscard]] std::string reason_of(const rank_reply& reply);
// "rank 1 (GPU 3)": how messages name a rank.
[[nodiscard]] std::string describe_rank(const rank_reply& reply);

}  // namespace hdb::allreduce
