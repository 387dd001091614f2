#include "p2p_plan.hpp"

#include <algorithm>

namespace hdb::p2p {

std::string_view to_string(method m) {
  switch (m) {
    case method::ce_peer: return "ce_peer";
    case method::ce_no_peer: return "ce_no_peer";
    case method::staged: return "staged";
    case method::sm_read: return "sm_read";
    case method::sm_write: return "sm_write";
  }
  return "?";
}

std::string_view to_string(traffic t) {
  switch (t) {
    case traffic::uni: return "uni";
    case traffic::bidir: return "bidir";
    case traffic::all_pairs: return "all_pairs";
    case traffic::loopback: return "loopback";
  }
  return "?";
}

std::string_view to_string(case_kind k) {
  switch (k) {
    case case_kind::bandwidth: return "bandwidth";
    case case_kind::latency: return "latency";
    case case_kind::chunk_sweep: return "chunk_sweep";
    case case_kind::aggregate: return "aggregate";
  }
  return "?";
}

peer_state required_peer_state(method m) {
  switch (m) {
    case method::ce_peer:
    case method::sm_read:
    case method::sm_write: return peer_state::enabled;
    case method::ce_no_peer: return peer_state::disabled;
    case method::staged: return peer_state::either;
  }
  return peer_state::either;
}

peer_state required_peer_state(const planned_case& c) {
  // A GPU never needs peer access to itself: a loopback runs in either state.
  return c.pattern == traffic::loopback ? peer_state::either : required_peer_state(c.how);
}

const std::vector<method>& all_methods() {
  // Grouped by peer state, disabled first (a fresh process's state), so the plan toggles once.
  static const std::vector<method> methods = {method::ce_no_peer, method::staged, method::ce_peer, method::sm_read,
                                              method::sm_write};
  return methods;
}

std::vector<ordered_pair> ordered_pairs(const std::vector<int>& devices) {
  std::vector<ordered_pair> pairs;
  for (int src : devices) {
    for (int dst : devices) {
      if (src != dst) pairs.push_back({src, dst});
    }
  }
  return pairs;
}

std::vector<ordered_pair> unordered_pairs(const std::vector<int>& devices) {
  std::vector<ordered_pair> pairs;
  for (const ordered_pair& p : ordered_pairs(devices)) {
    if (p.src < p.dst) pairs.push_back(p);
  }
  return pairs;
}

std::string needs_two_gpus_reason(std::size_t selected) {
  return "needs >= 2 GPUs (this run selected " + std::to_string(selected) + ")";
}

std::size_t effective_chunk(std::size_t candidate, std::size_t bytes) {
  constexpr std::size_t page = 4096;
  const std::size_t least = (bytes + max_chunks_per_transfer - 1) / max_chunks_per_transfer;
  const std::size_t chunk = (std::max(candidate, least) + page - 1) / page * page;
  return std::min(chunk, bytes);
}

std::vector<std::size_t> chunk_candidates(const std::vector<std::size_t>& candidates, std::size_t bytes) {
  std::vector<std::size_t> chunks;
  for (std::size_t c : candidates) chunks.push_back(effective_chunk(c, bytes));
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  return chunks;
}

std::size_t staged_ops_per_batch(std::size_t bytes, std::size_t chunk, std::size_t shared_ops_per_batch) {
  const std::size_t chunks = (bytes + chunk - 1) / std::max<std::size_t>(chunk, 1);
  const std::size_t fits = std::max<std::size_t>(max_chunks_per_transfer / std::max<std::size_t>(chunks, 1), 1);
  return std::clamp<std::size_t>(fits, 1, std::max<std::size_t>(shared_ops_per_batch, 1));
}

namespace {

std::vector<int> touched(const std::vector<ordered_pair>& transfers) {
  std::vector<int> devices;
  for (const ordered_pair& p : transfers) {
    devices.push_back(p.src);
    devices.push_back(p.dst);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

class planner {
 public:
  planner(const std::vector<int>& devices, const plan_options& options) : devices_(devices), options_(options) {
    if (devices.size() < 2) skip_ = needs_two_gpus_reason(devices.size());
  }

  std::vector<planned_case> run() {
    for (method how : all_methods()) {
      pair_cases(case_kind::bandwidth, how, traffic::uni, options_.sizes);
      pair_cases(case_kind::bandwidth, how, traffic::bidir, options_.sizes);
      pair_cases(case_kind::latency, how, traffic::uni, options_.latency_sizes);
      if (how == method::staged) {
        chunk_sweep(traffic::uni);
        loopback_cases(method::staged);
        chunk_sweep(traffic::loopback);
      }
      if (how == method::ce_peer) loopback_cases(method::ce_peer);
      aggregate_cases(how);
    }
    return std::move(plan_);
  }

 private:
  // The pairs a pair case runs on, or one placeholder (the first device to "none") when there is
  // no pair: the case is registered so its absence is reported.
  std::vector<std::vector<ordered_pair>> transfer_sets(traffic pattern) const {
    std::vector<std::vector<ordered_pair>> sets;
    if (skip_) {
      sets.push_back({});
      return sets;
    }
    if (pattern == traffic::bidir) {
      for (const ordered_pair& p : unordered_pairs(devices_)) sets.push_back({p, {p.dst, p.src}});
    } else {
      for (const ordered_pair& p : ordered_pairs(devices_)) sets.push_back({p});
    }
    return sets;
  }

  void add(planned_case c) {
    if (!c.transfers.empty()) {
      c.devices = touched(c.transfers);
    } else if (!devices_.empty()) {
      c.devices = {devices_.front()};
    }
    plan_.push_back(std::move(c));
  }

  planned_case pair_case(case_kind kind, method how, traffic pattern, const std::vector<ordered_pair>& transfers,
                         std::size_t bytes) const {
    planned_case c;
    c.kind = kind;
    c.how = how;
    c.pattern = pattern;
    c.transfers = transfers;
    c.bytes = bytes;
    if (!transfers.empty()) {
      c.src_label = std::to_string(transfers.front().src);
      c.dst_label = std::to_string(transfers.front().dst);
    }
    c.skip_reason = skip_;
    return c;
  }

  void pair_cases(case_kind kind, method how, traffic pattern, const std::vector<std::size_t>& sizes) {
    if (devices_.empty()) return;
    for (const auto& transfers : transfer_sets(pattern)) {
      for (std::size_t bytes : sizes) add(pair_case(kind, how, pattern, transfers, bytes));
    }
  }

  void chunk_sweep(traffic pattern) {
    if (devices_.empty()) return;
    std::vector<std::vector<ordered_pair>> sets;
    if (pattern == traffic::loopback) {
      for (int d : devices_) sets.push_back({{d, d}});
    } else {
      sets = transfer_sets(traffic::uni);
    }
    for (const auto& transfers : sets) {
      for (std::size_t chunk : chunk_candidates(options_.chunk_sizes, options_.chunk_sweep_size)) {
        planned_case c = pair_case(case_kind::chunk_sweep, method::staged, pattern, transfers, options_.chunk_sweep_size);
        c.chunk = chunk;
        if (pattern == traffic::loopback) c.skip_reason.reset();
        add(std::move(c));
      }
    }
  }

  // Each GPU to itself, through host memory (staged) and directly (cudaMemcpyPeerAsync to the same
  // device: a copy within its memory): the host-staging tax on a node of any size. Which of them
  // gates is schema.json's (its "gates").
  void loopback_cases(method how) {
    for (int d : devices_) {
      for (std::size_t bytes : options_.sizes) {
        planned_case c = pair_case(case_kind::bandwidth, how, traffic::loopback, {{d, d}}, bytes);
        c.skip_reason.reset();
        add(std::move(c));
      }
    }
  }

  void aggregate_cases(method how) {
    if (devices_.empty()) return;
    for (std::size_t bytes : options_.aggregate_sizes) {
      planned_case c;
      c.kind = case_kind::aggregate;
      c.how = how;
      c.pattern = traffic::all_pairs;
      c.transfers = skip_ ? std::vector<ordered_pair>{} : ordered_pairs(devices_);
      c.bytes = bytes;
      c.skip_reason = skip_;
      add(std::move(c));
    }
  }

  const std::vector<int>& devices_;
  const plan_options& options_;
  std::optional<std::string> skip_;
  std::vector<planned_case> plan_;
};

}  // namespace

std::vector<planned_case> plan_cases(const std::vector<int>& devices, const plan_options& options) {
  return planner(devices, options).run();
}

int peer_state_changes(const std::vector<planned_case>& plan) {
  bool enabled = false;
  int changes = 0;
  for (const planned_case& c : plan) {
    if (c.skip_reason) continue;
    const peer_state need = required_peer_state(c);
    if (need == peer_state::either || (need == peer_state::enabled) == enabled) continue;
    enabled = need == peer_state::enabled;
    ++changes;
  }
  return changes;
}

}  // namespace hdb::p2p
