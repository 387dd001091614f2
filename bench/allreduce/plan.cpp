#include "plan.hpp"

#include "hdb/options.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/units.hpp"
#include "hdb/sizes.hpp"

#include <algorithm>

namespace hdb::allreduce {

std::string_view to_string(placement p) { return p == placement::in_place ? "in_place" : "out_of_place"; }
std::string_view to_string(interconnect i) { return i == interconnect::p2p_disabled ? "p2p_disabled" : "default"; }
std::string_view to_string(launch_method m) { return m == launch_method::stream ? "stream" : "graph"; }

std::optional<launch_method> parse_launch_method(std::string_view text) {
  if (text == "graph") return launch_method::graph;
  if (text == "stream") return launch_method::stream;
  return std::nullopt;
}

std::vector<std::size_t> sampled_sizes(const std::vector<std::size_t>& sizes) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < sizes.size(); i += 4) out.push_back(sizes[i]);
  if (!sizes.empty() && out.back() != sizes.back()) out.push_back(sizes.back());
  return out;
}

std::vector<int> parse_ranks(const std::string& text, int available) {
  std::vector<int> ranks;
  if (text != "all") {
    ranks = parse_positive_int_list("ranks", text);
  } else {
    for (int n = 1; n <= std::max(available, 2); n *= 2) ranks.push_back(n);
    if (available > 2) ranks.push_back(available);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::vector<int> parse_straggler_delays(const std::string& flag, const std::string& text) {
  std::vector<int> delays;
  if (text == "none") return delays;
  const std::string range = "' (whole us from 0 to " + std::to_string(max_straggler_delay_us) + ", or none)";
  // An empty item (",," or "") is refused by name like any other.
  for (const std::string& item : split_list(text)) {
    // Digits only: no sign, no unit, no fraction; at most 6 of them so stoi cannot overflow.
    const bool digits = all_digits(item) && item.size() <= 6;
    if (!digits || std::stoi(item) > max_straggler_delay_us) {
      throw usage_error("bad value for --" + flag + ": '" + item + range);
    }
    delays.push_back(std::stoi(item));
  }
  std::sort(delays.begin(), delays.end());
  delays.erase(std::unique(delays.begin(), delays.end()), delays.end());
  return delays;
}

launch_method launch_for(const plan_options& o, std::size_t bytes) {
  if (o.launch) return *o.launch;
  return bytes < o.graph_below ? launch_method::graph : launch_method::stream;
}

batch_shape batch_for(std::size_t bytes) {
  constexpr std::size_t target = std::size_t{512} << 20;
  const std::size_t per_batch = std::clamp<std::size_t>(target / std::max<std::size_t>(bytes, 1), 2, 100);
  const int iterations = static_cast<int>(per_batch);
  return {std::clamp(iterations / 5, 1, 10), iterations};
}

namespace {

planned_case make(collective op, data_type type, placement where, interconnect via, int ranks, std::size_t requested,
                  launch_method launch) {
  planned_case c;
  c.op = op;
  c.type = type;
  c.where = where;
  c.via = via;
  c.ranks = ranks;
  c.launch = launch;
  c.count = message_count(op, type, requested, ranks);
  c.bytes = c.count * element_bytes(type);
  if (c.count == 0) {
    c.bytes = requested;
    c.skip_reason = format_size(requested) + " holds less than one " + std::string(to_string(type)) +
                    " element per rank for " + std::to_string(ranks) + " ranks";
  }
  return c;
}

bool is_lesson_sweep(collective op, data_type type, placement where, interconnect via) {
  return op == collective::all_reduce && type == data_type::float32 && where == placement::out_of_place &&
         via == interconnect::default_transports;
}

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// One rank (the last) enters each all-reduce late, at the largest rank count: a case per delay and
// per rank, so every rank's time is a row of its own. Stream-launched: the delay kernel sits between
// the collectives on the late rank's stream, and at the default 64 MiB one host call per collective
// costs nothing the ~200 µs collective would notice.
void add_straggler(const plan_options& o, std::vector<planned_case>& cases) {
  if (o.straggler_delays_us.empty()) return;
  const int ranks = std::min(o.ranks.back(), o.available_ranks);
  const auto straggler = [&](int n, int delay_us, int rank) {
    planned_case c = make(collective::all_reduce, data_type::float32, placement::out_of_place,
                          interconnect::default_transports, n, o.straggler_bytes, launch_method::stream);
    c.kind = case_kind::straggler;
    c.straggler_rank = n - 1;
    c.delay_us = delay_us;
    c.rank = rank;
    return c;
  };
  if (ranks < 2) {
    // One case says why, as the other multi-rank cases do on a one-GPU node.
    planned_case c = straggler(2, o.straggler_delays_us.back(), 0);
    c.skip_reason = o.available_ranks < 2
                        ? "the straggler case needs 2 ranks (one process and GPU each); " +
                              std::to_string(o.available_ranks) + " available"
                        : "the straggler case needs 2 ranks; the largest of --ranks is " + std::to_string(o.ranks.back());
    cases.push_back(std::move(c));
    return;
  }
  for (int delay_us : o.straggler_delays_us) {
    for (int rank = 0; rank < ranks; ++rank) cases.push_back(straggler(ranks, delay_us, rank));
  }
}

}  // namespace

std::vector<planned_case> plan_cases(const plan_options& o) {
  std::vector<planned_case> cases;
  const std::vector<std::size_t> sampled = sampled_sizes(o.sizes);
  if (o.sizes.empty()) return cases;
  const auto add_sweep = [&](interconnect via, int ranks) {
    bool noted_one_rank_in_place = false;
    for (collective op : o.collectives) {
      for (data_type type : o.types) {
        for (placement where : o.placements) {
          if (ranks == 1 && where == placement::in_place) {
            // NCCL returns at once for an in-place collective of one rank (a reduction of one
            // input onto itself): nothing reaches the device, and a "time" would be the events'
            // own gap (an algbw of PB/s). One skipped case says so for all of them.
            if (!noted_one_rank_in_place) {
              planned_case c = make(op, type, where, via, ranks, o.sizes.back(), launch_for(o, o.sizes.back()));
              c.skip_reason = "in place on one rank NCCL does no device work (nothing moves): nothing to time; "
                              "no collective or dtype is measured in place on one rank";
              cases.push_back(std::move(c));
              noted_one_rank_in_place = true;
            }
            continue;
          }
          const bool lesson = is_lesson_sweep(op, type, where, via);
          for (std::size_t bytes : lesson ? o.sizes : sampled) {
            cases.push_back(make(op, type, where, via, ranks, bytes, launch_for(o, bytes)));
          }
        }
      }
    }
  };
  const auto unavailable = [&](interconnect via, int ranks) {
    planned_case c =
        make(collective::all_reduce, data_type::float32, placement::out_of_place, via, ranks, o.sizes.back(),
             launch_for(o, o.sizes.back()));
    c.skip_reason = std::to_string(ranks) + " ranks need " + std::to_string(ranks) + " GPUs (one process each); " +
                    std::to_string(o.available_ranks) + " available";
    cases.push_back(std::move(c));
  };

  if (contains(o.interconnects, interconnect::default_transports)) {
    for (int ranks : o.ranks) {
      if (ranks > o.available_ranks) {
        unavailable(interconnect::default_transports, ranks);
      } else {
        add_sweep(interconnect::default_transports, ranks);
      }
    }
    if (o.overlap_bytes > 0) {
      const int ranks = std::min(o.ranks.back(), o.available_ranks);
      planned_case c = make(collective::all_reduce, data_type::float32, placement::out_of_place,
                            interconnect::default_transports, ranks, o.overlap_bytes, launch_method::stream);
      c.kind = case_kind::overlap;
      cases.push_back(std::move(c));
    }
    add_straggler(o, cases);
  }
  if (contains(o.interconnects, interconnect::p2p_disabled)) {
    // One rank moves nothing over an interconnect: the comparison starts at two.
    for (int ranks : o.ranks) {
      if (ranks < 2) continue;
      if (ranks > o.available_ranks) {
        unavailable(interconnect::p2p_disabled, ranks);
        continue;
      }
      for (std::size_t bytes : sampled) {
        cases.push_back(make(collective::all_reduce, data_type::float32, placement::out_of_place,
                             interconnect::p2p_disabled, ranks, bytes, launch_for(o, bytes)));
      }
    }
  }
  return cases;
}

}  // namespace hdb::allreduce
