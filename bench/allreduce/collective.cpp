#include "collective.hpp"

#include "hdb/util/units.hpp"

namespace hdb::allreduce {

const collective_traits& traits(collective op) {
  switch (op) {
    case collective::all_reduce: return all_reduce_traits();
    case collective::reduce_scatter: return reduce_scatter_traits();
    case collective::all_gather: return all_gather_traits();
  }
  return all_reduce_traits();
}

const std::vector<collective>& all_collectives() {
  static const std::vector<collective> ops = {collective::all_reduce, collective::reduce_scatter,
                                              collective::all_gather};
  return ops;
}

std::string_view to_string(collective op) { return traits(op).name; }

std::string_view to_string(data_type type) {
  switch (type) {
    case data_type::float32: return "float";
    case data_type::bfloat16: return "bfloat16";
    case data_type::float16: return "half";
  }
  return "?";
}

std::optional<collective> parse_collective(std::string_view text) {
  for (collective op : all_collectives()) {
    if (to_string(op) == text) return op;
  }
  return std::nullopt;
}

std::optional<data_type> parse_data_type(std::string_view text) {
  for (data_type type : {data_type::float32, data_type::bfloat16, data_type::float16}) {
    if (to_string(type) == text) return type;
  }
  return std::nullopt;
}

std::size_t element_bytes(data_type type) { return type == data_type::float32 ? 4 : 2; }

std::uint64_t message_count(collective op, data_type type, std::size_t bytes, int ranks) {
  const std::uint64_t count = bytes / element_bytes(type);
  if (!traits(op).split_over_ranks) return count;
  return count / static_cast<std::uint64_t>(ranks) * static_cast<std::uint64_t>(ranks);
}

double algbw_gbps(std::size_t bytes, double seconds) { return gb_per_s(static_cast<double>(bytes), seconds * 1e6); }

double busbw_gbps(collective op, int ranks, std::size_t bytes, double seconds) {
  return algbw_gbps(bytes, seconds) * traits(op).bus_factor(ranks);
}

}  // namespace hdb::allreduce
