#pragma once
// The tiered default on a node of many GPUs (docs/harness.md, "Tiers"): the harness gives the
// full sweep to one GPU per class and one ordered pair per link class, and tells every family
// which ones with --sweep-devices / --sweep-pairs. Every other GPU and pair measures only its
// tier points: what gates or is checked there (the headline and `checks` cases), and on a GPU
// a short sweep of those same cases at the sizes that are powers of 64. Cases spanning every selected
// GPU run as always; a collective over a subset of them (a `ranks` parameter) keeps its tier
// points only, so the full sweep of a collective is at the largest rank count.
// Host-only: the binaries apply it, the tests check it without a GPU.
#include "hdb/contract/declaration.hpp"

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace hdb {

struct sweep_selection {
  std::optional<std::vector<int>> devices;              // nullopt: every GPU gets the full sweep
  std::optional<std::vector<std::pair<int, int>>> pairs;  // nullopt: every ordered pair does
};

// --sweep-devices: "all" or indices ("0,4"); --sweep-pairs: "all", "none" or ordered pairs
// "0>1,0>4". Throws usage_error naming the flag.
[[nodiscard]] sweep_selection parse_sweep_selection(std::string_view devices, std::string_view pairs);

// Throws usage_error naming the flag when the selection names a GPU, or a pair's GPU, that is not
// among `selected` (the run's GPUs): --sweep-devices=9 on one GPU would otherwise run everything.
void require_selected(const sweep_selection& selection, const std::vector<int>& selected);

// What the rule needs of a registered case.
struct case_shape {
  const std::string* kind = nullptr;
  const label_list* labels = nullptr;
  const std::vector<int>* devices = nullptr;
  bool headline = false;
};

// keep[i]: whether cases[i] runs under `selection` on a run of `selected_devices` GPUs.
[[nodiscard]] std::vector<bool> cases_in_sweep(const std::vector<case_shape>& cases, const sweep_selection& selection,
                                               std::size_t selected_devices, const std::vector<check_decl>& checks);

}  // namespace hdb
