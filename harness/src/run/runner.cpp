#include "hdb/harness/run/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/data/collect.hpp"
#include "hdb/harness/data/metric_key.hpp"
#include "hdb/harness/data/run_index.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/harness/data/gpu_health.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/run/node_probe.hpp"
#include "hdb/harness/run/plan.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/run/tiers.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/process.hpp"
#include "hdb/harness/report/report.hpp"
#include "hdb/harness/data/run_dir.hpp"
#include "hdb/harness/common/tables.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t stderr_tail_bytes = 4096;
constexpr auto list_timeout = std::chrono::seconds(120);

std::string minutes_seconds(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  return buffer;
}

bool cancelled(const suite_run_options& options) { return options.cancel != nullptr && *options.cancel != 0; }

// The cases the binary will run: the non-empty lines of --benchmark_list_tests. `cancel` ends
// the listing as it ends a family's run: a binary hung in its list step must not outlive SIGTERM.
std::optional<std::vector<std::string>> list_cases(const fs::path& binary, const std::vector<std::string>& flags,
                                                   const volatile std::sig_atomic_t* cancel) {
  child_spec spec;
  spec.cancel = cancel;
  spec.argv = {binary.string()};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.emplace_back("--benchmark_list_tests");
  spec.timeout = list_timeout;
  const auto result = run_with_deadline(spec);
  if (!result.succeeded()) return std::nullopt;
  std::vector<std::string> names;
  for (std::size_t begin = 0; begin < result.output.size();) {
    auto end = result.output.find('\n', begin);
    if (end == std::string::npos) end = result.output.size();
    const auto first = result.output.find_first_not_of(" \t\r", begin);
    if (first < end) {
      const auto last = result.output.find_last_not_of(" \t\r", end - 1);
      names.push_back(result.output.substr(first, last - first + 1));
    }
    begin = end + 1;
  }
  return names;
}

std::string gpu_list(const std::vector<int>& gpus) {
  std::string text;
  for (int g : gpus) text += (text.empty() ? "" : ",") + std::to_string(g);
  return text;
}

// The set whose runs price the plan: --reference when it names a set (of any kind: pricing needs
// the same cases, not the same node), else the set of the node's kind, else the set of its GPU
// model with the fewest GPUs (an eight-GPU node beside a one-GPU set).
std::optional<reference_set> cost_set_for(const nlohmann::json& node, const suite_run_options& options) {
  if (options.reference && is_reference_set(*options.reference)) return load_reference_set(*options.reference);
  const nlohmann::json meta{{"node", node}};
  try {
    if (auto set = find_reference_set(meta, options.reference)) return set;
    return find_reference_set_of_gpu_model(meta, options.reference);
  } catch (const harness_error&) {
    if (options.reference) throw;
    return std::nullopt;  // a node without a kind: documented defaults
  }
}

// A reference (set or single run) of the same GPU model whose node has GPU pairs: how an assumed
// node's pairs are joined, and what pair and multi-rank cases cost where the node's own set has none.
struct paired_reference {
  fs::path dir;
  nlohmann::json pair_link;
  std::vector<nlohmann::json> metas;  // the members', or the single run's
};

std::optional<paired_reference> paired_reference_for(const nlohmann::json& node) {
  const std::string gpu_name = node.value("gpus", nlohmann::json::array()).empty() ? "" : node["gpus"][0].value("name", "");
  std::error_code ec;
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(reference_place_for(std::nullopt).dir, ec)) candidates.push_back(entry.path());
  std::sort(candidates.begin(), candidates.end());
  for (const auto& dir : candidates) {
    const auto meta = read_meta(dir / "meta.json");
    if (!meta || !meta->contains("node")) continue;
    const auto& other = (*meta)["node"];
    const auto& pairs = other.value("topology", nlohmann::json::object()).value("pairs", nlohmann::json::array());
    if (pairs.empty() || other.value("gpus", nlohmann::json::array()).empty() || other["gpus"][0].value("name", "") != gpu_name) continue;
    paired_reference found{dir, pairs[0].value("link", nlohmann::json()), {}};
    if (is_reference_set(dir)) {
      for (const auto& member : load_reference_set(dir).runs) {
        if (member.meta) found.metas.push_back(*member.meta);
      }
    } else {
      found.metas.push_back(*meta);
    }
    return found;
  }
  return std::nullopt;
}

std::string runs_name(const fs::path& dir, std::size_t runs) {
  return dir.filename().string() + " (" + std::to_string(runs) + (runs == 1 ? " run)" : " runs)");
}

struct planned_run {
  std::vector<family_plan> families;
  std::set<std::string> listed;  // the families whose cases could be listed
  double harness_s = 0;
  double total_s = 0;
};

planned_run plan_run(const std::vector<family_entry>& families, const suite_run_options& options,
                     const std::vector<std::string>& selection, const std::vector<std::string>& listing_flags,
                     const std::optional<reference_set>& set, const std::optional<paired_reference>& paired) {
  std::vector<nlohmann::json> metas;
  if (set) {
    for (const auto& member : set->runs) {
      if (member.meta) metas.push_back(*member.meta);
    }
  }
  const cost_source costs{set ? runs_name(set->dir, set->runs.size()) : "", learn_costs(metas)};
  cost_source wider;
  if (paired && (!set || fs::weakly_canonical(paired->dir) != fs::weakly_canonical(set->dir))) {
    wider = {runs_name(paired->dir, paired->metas.size()), learn_costs(paired->metas)};
  }
  planned_run plan;
  plan.harness_s = harness_overhead(metas, plan_defaults{});
  plan.total_s = plan.harness_s;
  for (const auto& family : families) {
    auto flags = family_flags(family, options);
    flags.insert(flags.end(), selection.begin(), selection.end());
    flags.insert(flags.end(), listing_flags.begin(), listing_flags.end());
    if (cancelled(options)) break;
    const auto names = list_cases(options.bin_dir / family.binary, flags, options.cancel);
    family_plan f = plan_family(family.name, names.value_or(std::vector<std::string>{}), costs, wider, plan_defaults{});
    if (names) plan.listed.insert(family.name);
    else f.basis = "could not list its cases";
    plan.total_s += f.seconds;
    plan.families.push_back(std::move(f));
  }
  return plan;
}

// Follows the JSON file the binary flushes after every case and prints a line when more
// cases finished, at most once per interval: a family can finish hundreds of cases a minute,
// and each look re-reads the whole file.
class progress_meter {
 public:
  progress_meter(std::string family, fs::path json, const family_plan* plan, std::ostream& log)
      : family_(std::move(family)), json_(std::move(json)), plan_(plan), log_(log),
        start_(std::chrono::steady_clock::now()), last_look_(start_) {}

  void poll() {
    constexpr auto interval = std::chrono::seconds(5);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_look_ < interval) return;
    last_look_ = now;
    std::error_code ec;
    const auto size = fs::file_size(json_, ec);
    if (ec || size == last_size_) return;
    last_size_ = size;
    const auto text = try_read_text_file(json_);
    if (!text) return;
    try {
      std::set<std::string> finished;
      for (const auto& run : read_raw_json(*text).runs) finished.insert(run.run_name);
      if (finished.size() != done_) report(finished);
    } catch (const harness_error&) {
      // no context yet
    }
  }

  void report(const std::set<std::string>& finished) {
    done_ = finished.size();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    log_ << "[" << family_ << "] " << done_;
    if (plan_) log_ << "/" << plan_->cases;
    log_ << " cases, " << minutes_seconds(elapsed) << " elapsed";
    if (const auto left = plan_ ? remaining_seconds(*plan_, finished, elapsed) : std::nullopt) {
      log_ << ", ~" << minutes_seconds(*left) << " remaining";
    }
    log_ << "\n" << std::flush;
  }

 private:
  std::string family_;
  fs::path json_;
  const family_plan* plan_;  // nullptr: the family's cases could not be listed
  std::ostream& log_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_look_;
  std::uintmax_t last_size_ = 0;
  std::size_t done_ = 0;
};

family_status status_from(const child_result& result) {
  family_status status;
  status.exit_code = result.exit_code;
  status.signal = result.signal;
  status.elapsed_s = result.elapsed_s;
  switch (result.end) {
    case child_end::not_started:
      status.state = family_state::failed;
      status.error = "could not start: " + result.start_error;
      break;
    case child_end::timed_out:
      status.state = family_state::timed_out;
      break;
    case child_end::cancelled:
      status.state = family_state::failed;
      status.error = "interrupted (hdbench received a signal)";
      break;
    case child_end::signalled:
      status.state = family_state::crashed;
      break;
    case child_end::exited:
      status.state = result.exit_code == 0 ? family_state::ok : family_state::failed;
      break;
  }
  return status;
}

void save_status(const fs::path& raw_dir, const family_status& status) {
  write_json_file(raw_dir / (status.family + ".status.json"), to_json(status));
}

// The harness itself: it creates no CUDA context today, but a process of ours is never
// "another process".
std::vector<long> own_pids() { return {static_cast<long>(::getpid())}; }

// The end snapshot, once the family's own processes are gone: a worker's context can stay listed
// by the driver for a moment after it exited. Someone else's process outlasts the wait.
activity_snapshot settled_activity_snapshot() {
  constexpr int attempts = 12;
  constexpr auto pause = std::chrono::milliseconds(250);
  activity_snapshot snapshot = take_activity_snapshot(own_pids());
  for (int i = 1; i < attempts && !snapshot.processes.empty(); ++i) {
    std::this_thread::sleep_for(pause);
    snapshot = take_activity_snapshot(own_pids());
  }
  return snapshot;
}

// `path` relative to the working directory when it lies below it, else as given.
std::string recorded_path(const fs::path& path) {
  std::error_code ec;
  const auto relative = fs::proximate(path, ec);
  if (ec || relative.empty() || *relative.begin() == "..") return path.string();
  return relative.string();
}

}  // namespace

namespace {

// "--copy.sizes=1M" -> "copy"; nullopt for a flag every family gets (a dot after '=' is a value).
std::optional<std::string> routed_family(const std::string& flag) {
  const auto dot = flag.find('.');
  const auto eq = flag.find('=');
  if (!flag.starts_with("--") || dot == std::string::npos || (eq != std::string::npos && eq < dot)) return std::nullopt;
  return flag.substr(2, dot - 2);
}

// A regular expression that matches `text` alone in Google Benchmark's filter (POSIX extended or
// ECMAScript: a backslash makes each special character literal in both).
std::string regex_literal(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\.^$|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// The cases behind the figures check FAILs and has not let go: measured once, or failed on every
// try so far. By family, case keys (metric empty).
std::map<std::string, std::set<metric_key>> failing_cases(const check_report& report) {
  std::map<std::string, std::set<metric_key>> cases;
  for (const auto& line : report.lines) {
    const bool undecided = line.confirmed == confirmation::unconfirmed || line.confirmed == confirmation::confirmed;
    if (line.result != grade::fail || !line.is_figure() || !line.key || !undecided) continue;
    auto key = *line.key;
    key.metric.clear();
    cases[key.family].insert(std::move(key));
  }
  return cases;
}

// Sleeps `seconds`, waking early when the run is cancelled.
void pause_for(double seconds, const suite_run_options& options) {
  using clock = std::chrono::steady_clock;
  const auto until = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  while (!cancelled(options) && clock::now() < until) {
    std::this_thread::sleep_for(std::min<clock::duration>(std::chrono::milliseconds(100), until - clock::now()));
  }
}

struct confirmations {
  std::vector<family_status> statuses;  // every family run of every further try
  nlohmann::json record = nlohmann::json::array();  // meta.json "confirmation"'s "attempts"
};

// Confirms the run's FAILs (suite_run_options::confirm_pauses): after each pause, measures again
// the cases behind the figures that still FAIL, into raw/attempt<N>/, and collects the run again,
// so that results.csv holds every try and check grades each figure on its last. Stops early when
// nothing FAILs. A crash while confirming is a crash: its status is among those returned.
confirmations confirm_failures(const fs::path& run_dir, const std::vector<family_entry>& families,
                               const suite_run_options& options, const std::vector<std::string>& selection,
                               const collected_run& first, std::ostream& log) {
  confirmations done;
  const auto raw_dir = run_dir / "raw";
  const int tries = static_cast<int>(options.confirm_pauses.size()) + 1;
  for (int attempt = 2; attempt <= tries && !cancelled(options); ++attempt) {
    std::map<std::string, std::set<metric_key>> cases;
    try {
      cases = failing_cases(check_run(run_dir, check_options{}));
    } catch (const harness_error&) {
      break;  // nothing to grade: write_check says why
    }
    if (cases.empty()) break;
    std::size_t count = 0;
    for (const auto& [family, keys] : cases) count += keys.size();
    const double pause = options.confirm_pauses[static_cast<std::size_t>(attempt - 2)];
    log << "hdbench: " << count << (count == 1 ? " case behind a FAIL" : " cases behind FAILs") << ": measuring "
        << (count == 1 ? "it" : "them") << " again in " << format_figure(pause) << " s (try " << attempt << " of " << tries
        << "), so that only a FAIL that persists stands\n";
    pause_for(pause, options);
    done.record.push_back({{"attempt", attempt}, {"pause_s", pause}, {"cases", count},
                           {"started_utc", utc_timestamp(std::chrono::system_clock::now())}});
    const auto dir = attempt_dir(raw_dir, attempt);
    fs::create_directories(dir);
    for (const auto& family : families) {
      const auto wanted = cases.find(family.name);
      const auto collected = std::find_if(first.families.begin(), first.families.end(),
                                          [&](const collected_family& f) { return f.status.family == family.name; });
      if (wanted == cases.end() || collected == first.families.end() || !collected->declaration || cancelled(options)) continue;
      const auto raw = load_family_raw(raw_dir, family.name);
      if (!raw.output) continue;
      std::string filter;
      for (const auto& name : run_names_of(*raw.output, *collected->declaration, wanted->second)) {
        filter += (filter.empty() ? "" : "|") + regex_literal(name);
      }
      if (filter.empty()) continue;
      auto flags = selection;
      flags.push_back("--benchmark_filter=^(" + filter + ")$");
      done.statuses.push_back(run_family(family, options, flags, nullptr, dir, log));
    }
    (void)collect_and_write(run_dir, {options.manifest, options.bin_dir / "schema"});
  }
  return done;
}

// What a confirmation may add to the plan: nothing on a healthy node.
std::string confirmation_note(const suite_run_options& options) {
  if (options.confirm_pauses.empty()) return "confirmation off (--confirm=off): a FAIL is measured once";
  double pauses = 0;
  std::string list;
  for (const double p : options.confirm_pauses) {
    pauses += p;
    list += (list.empty() ? "" : " + ") + format_figure(p) + " s";
  }
  return "confirmation: nothing on a healthy node; a figure that FAILs is measured again up to " +
         std::to_string(options.confirm_pauses.size()) + " more time" + (options.confirm_pauses.size() == 1 ? "" : "s") +
         ", after " + list + " of pauses (" + minutes_seconds(pauses) + " and its cases again)";
}

}  // namespace

std::vector<double> parse_confirm_pauses(const std::string& text) {
  if (text == "off") return {};
  std::vector<double> pauses;
  for (const auto& item : split_list(text)) {
    char* end = nullptr;
    const double seconds = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !(seconds >= 0 && seconds <= 600)) {
      throw harness_error("--confirm: '" + item + "' is not a pause in seconds from 0 to 600 (--confirm=10,30, or off)");
    }
    pauses.push_back(seconds);
  }
  if (pauses.empty() || pauses.size() > 5) throw harness_error("--confirm: give 1 to 5 pauses in seconds (--confirm=10,30), or off");
  return pauses;
}

std::vector<std::string> family_flags(const family_entry& family, const suite_run_options& options) {
  auto flags = family.flags;
  if (options.quick) flags.insert(flags.end(), family.quick_flags.begin(), family.quick_flags.end());
  // "--copy.sizes=1M" is for the copy family only, which gets "--sizes=1M"; other flags go to all.
  for (const auto& flag : options.extra_flags) {
    const auto target = routed_family(flag);
    if (!target) {
      flags.push_back(flag);
    } else if (*target == family.name) {
      flags.push_back("--" + flag.substr(flag.find('.') + 1));
    }
  }
  return flags;
}

std::vector<std::string> selection_flags(const node_tiers& tiers, const suite_run_options& options) {
  auto flags = options.full ? std::vector<std::string>{} : sweep_flags(tiers);
  if (options.verdict) flags.emplace_back("--verdict");
  if (!options.stopping.empty()) flags.push_back("--stopping=" + options.stopping);
  return flags;
}

void check_routed_flags(const std::vector<family_entry>& manifest, const std::vector<std::string>& extra_flags) {
  std::string names;
  for (const auto& family : manifest) names += (names.empty() ? "" : ", ") + family.name;
  for (const auto& flag : extra_flags) {
    const auto target = routed_family(flag);
    if (!target) continue;
    const bool known = std::any_of(manifest.begin(), manifest.end(), [&](const family_entry& f) { return f.name == *target; });
    if (!known) throw harness_error("flag " + flag + " names no family '" + *target + "' (families: " + names + ")");
  }
}

family_status run_family(const family_entry& family, const suite_run_options& options, const std::vector<std::string>& selection,
                         const family_plan* plan, const fs::path& raw_dir, std::ostream& log) {
  const auto binary = options.bin_dir / family.binary;
  const auto json_path = raw_dir / (family.name + ".json");
  const auto costs_path = raw_dir / (family.name + ".costs.jsonl");
  auto flags = family_flags(family, options);
  flags.insert(flags.end(), selection.begin(), selection.end());
  child_spec spec;
  // Started by the path relative to the run's working directory where there is one, so that
  // what the run records (the command line, the binary's own "Running ..." line) does not carry
  // this machine's directory layout.
  spec.argv = {recorded_path(binary)};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.push_back("--case-costs=" + costs_path.string());
  spec.argv.push_back("--benchmark_out=" + json_path.string());
  spec.argv.emplace_back("--benchmark_out_format=json");
  spec.stdout_path = raw_dir / (family.name + ".stdout.log");
  spec.stderr_path = raw_dir / (family.name + ".stderr.log");
  spec.timeout = std::chrono::duration<double>(family.timeout_s * options.timeout_scale);
  spec.cancel = options.cancel;

  family_status status;
  if (!fs::exists(binary)) {
    status.state = family_state::failed;
    status.error = "binary not found: " + binary.string();
  } else {
    log << "[" << family.name << "] starting " << binary.filename().string()
        << (plan ? ", " + std::to_string(plan->cases) + " cases" : std::string()) << "\n";
    progress_meter meter(family.name, json_path, plan, log);
    // Taken outside the family's lifetime, so that its own context is never among the processes.
    family_activity activity;
    activity.start = take_activity_snapshot(own_pids());
    status = status_from(run_with_deadline(spec, [&] { meter.poll(); }));
    activity.end = settled_activity_snapshot();
    status.activity = std::move(activity);
    status.stderr_tail = read_file_tail(spec.stderr_path, stderr_tail_bytes);
    if (const auto costs = try_read_text_file(costs_path)) status.case_costs = read_case_costs(*costs);
  }
  status.family = family.name;
  status.binary = spec.argv.front();
  status.command_line = spec.argv;
  status.timeout_s = spec.timeout.count();
  const auto raw = load_family_raw(raw_dir, family.name);
  reconcile_status(status, raw);
  if (status.activity && raw.output) status.activity->measured_gpus = measured_gpu_uuids(*raw.output);
  save_status(raw_dir, status);
  log << "[" << family.name << "] "
      << (status.state == family_state::ok ? "ok, " + std::to_string(status.cases) + " cases" : failure_reason(status))
      << " in " << minutes_seconds(status.elapsed_s) << "\n";
  return status;
}

int run_suite(const suite_run_options& options, std::ostream& log) {
  const auto manifest = load_manifest(options.manifest);
  check_routed_flags(manifest.families, options.extra_flags);  // before anything is created or measured
  const auto families = select_families(manifest, options.families);
  // Before a run directory exists: a node without a usable GPU gets one line and no empty run.
  const nlohmann::json node = run_probe(options.bin_dir / "hdbench-probe");
  if (!node.contains("gpus") || !node["gpus"].is_array() || node["gpus"].empty()) {
    std::string why = node.value("error", std::string("hdbench-probe found none"));
    // CUDA's words for "no driver at all" read like a version mismatch.
    if (!fs::exists("/proc/driver/nvidia/version")) why = "no NVIDIA driver is loaded (CUDA says: " + why + ")";
    throw harness_error("no usable GPU here: " + why + "; nothing measured");
  }
  const auto started = std::chrono::system_clock::now();
  const auto hostname = local_hostname();
  const auto run_dir = create_run_dir(options.out_base, make_run_id(started, hostname));
  const auto raw_dir = run_dir / "raw";
  fs::create_directories(raw_dir);
  fs::create_directories(run_dir / "plots");
  log << "hdbench: run " << run_dir.string() << "\n";
  if (!options.run_dir_file.empty()) atomic_write_file(options.run_dir_file, run_dir.string() + "\n");

  // meta.json first, so that even a run killed in its first family leaves the fingerprint.
  const run_identity identity{run_dir.filename().string(), started, options.command_line, options.quick, options.verdict};
  auto meta = make_meta(identity, gather_host_facts(), node);
  // The links' error counters and the GPUs' own record before the first family and after the
  // last, and the kernel log's Xid lines in between: `hdbench check` fails a GPU whose PCIe
  // replays, NVLink or ECC errors grew, whose row remap is pending, or that logged an Xid.
  record_health_start(meta["health"]);
  const node_tiers tiers = tiers_of(meta["node"]);
  meta["tiers"] = to_json(tiers, options.full);
  const std::vector<std::string> selection = selection_flags(tiers, options);
  write_meta(run_dir / "meta.json", meta);
  if (options.verdict) {
    log << "hdbench: verdict run: on every GPU and pair only the cases the declarations' checks and gates select "
           "(what check grades and compare gates); no sweeps\n";
  } else if (tiers.gpus.size() > 1) {
    log << "hdbench: " << (options.full ? "full sweep on every GPU and pair (--full)" : "tiered: full sweep on GPU");
    if (!options.full) {
      for (const auto& c : tiers.classes) log << " " << c.representative << " (" << c.gpus.size() << " GPUs: " << c.key << ")";
      log << "; the others their headline and checked cases (--full for every case everywhere)";
    }
    log << "\n";
  }
  planned_run plan;
  try {
    const auto paired = tiers.gpus.size() > 1 ? paired_reference_for(meta["node"]) : std::nullopt;
    plan = plan_run(families, options, selection, {}, cost_set_for(meta["node"], options), paired);
    log << "hdbench: plan: about " << minutes_seconds(plan.total_s) << " (";
    for (std::size_t i = 0; i < plan.families.size(); ++i) {
      log << (i ? ", " : "") << plan.families[i].family << " " << minutes_seconds(plan.families[i].seconds);
    }
    log << ", plots and report " << minutes_seconds(plan.harness_s);
    log << "; `hdbench run --plan` for the detail)\n";
    log << "hdbench: " << confirmation_note(options) << "\n";
  } catch (const harness_error& e) {
    log << "hdbench: no plan: " << e.what() << "\n";
  }

  for (const auto& family : families) {
    if (cancelled(options)) {
      family_status skipped;
      skipped.family = family.name;
      skipped.state = family_state::failed;
      skipped.error = "not run: interrupted";
      save_status(raw_dir, skipped);
      continue;
    }
    const auto planned = std::find_if(plan.families.begin(), plan.families.end(),
                                      [&](const family_plan& f) { return f.family == family.name; });
    const bool listed = planned != plan.families.end() && plan.listed.contains(family.name);
    (void)run_family(family, options, selection, listed ? &*planned : nullptr, raw_dir, log);
  }

  meta["finished_utc"] = utc_timestamp(std::chrono::system_clock::now());
  record_health_end(meta["health"]);
  write_meta(run_dir / "meta.json", meta);
  // results.csv, and each family's status, declaration and plot module into meta.json
  const auto collected = collect_and_write(run_dir, {options.manifest, options.bin_dir / "schema"});
  const auto confirmed = confirm_failures(run_dir, families, options, selection, collected, log);
  // Who else was on the GPUs as the run ended: a neighbour still there is a fault, one that had
  // left is named and the figures measured after it decide (check_health.cpp).
  if (auto ended = read_meta(run_dir / "meta.json")) {
    (*ended)["confirmation"] = {{"pauses_s", options.confirm_pauses}, {"attempts", confirmed.record}};
    if (!confirmed.record.empty()) {
      (*ended)["finished_utc"] = utc_timestamp(std::chrono::system_clock::now());
      record_health_end((*ended)["health"]);
    }
    (*ended)["health"]["processes_end"] = to_json(settled_activity_snapshot());
    write_meta(run_dir / "meta.json", *ended);
  }
  const auto after_families = std::chrono::steady_clock::now();
  write_check(run_dir, log);
  if (!cancelled(options)) draw_plots(run_dir, options.plots, log, options.cancel);
  write_report(run_dir);
  // What the plan adds to the families' time: collecting, checking, plotting and the report.
  if (auto collected_meta = read_meta(run_dir / "meta.json")) {
    (*collected_meta)["harness_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - after_families).count();
    write_meta(run_dir / "meta.json", *collected_meta);
  }

  std::size_t failed = 0;
  for (const auto& family : collected.families) failed += family.status.state != family_state::ok ? 1 : 0;
  std::size_t failed_confirming = 0;
  for (const auto& status : confirmed.statuses) {
    if (status.state == family_state::ok) continue;
    ++failed_confirming;
    log << "hdbench: [" << status.family << "] failed while confirming a FAIL: " << failure_reason(status) << "\n";
  }
  const auto final_rows = confirmed.record.empty()
                              ? collected.rows
                              : split_attempts(collect_run(run_dir, {options.manifest, options.bin_dir / "schema"}).rows).last;
  const std::string headlines = headline_summary(final_rows, read_meta(run_dir / "meta.json").value_or(nlohmann::json::object()));
  log << "hdbench: headline figures (median)\n" << (headlines.empty() ? "  none\n" : headlines);
  log << "hdbench: " << collected.families.size() - failed << " of " << collected.families.size()
      << " families ok" << (failed_confirming > 0 ? " (" + std::to_string(failed_confirming) + " failed while confirming)" : "")
      << ". Results in " << run_dir.string() << "/: results.csv, meta.json, report.md, plots/, raw/\n";
  return failed + failed_confirming == 0 ? 0 : 1;
}

void write_check(const fs::path& run_dir, std::ostream& log) {
  try {
    write_check_files(run_dir, check_run(run_dir, check_options{}));
  } catch (const harness_error& e) {
    log << "hdbench: no check.txt or check.json (the node figures and fleet need them): " << e.what() << "\n";
  }
}

int print_plan(const suite_run_options& options, std::ostream& out) {
  const auto manifest = load_manifest(options.manifest);
  check_routed_flags(manifest.families, options.extra_flags);
  const auto families = select_families(manifest, options.families);
  nlohmann::json node = run_probe(options.bin_dir / "hdbench-probe");
  const bool has_gpus = node.contains("gpus") && node["gpus"].is_array() && !node["gpus"].empty();
  std::optional<reference_set> set = has_gpus ? cost_set_for(node, options) : std::nullopt;
  if (!has_gpus) {
    if (!options.reference) {
      throw harness_error("run --plan: no GPU here; name the kind to plan for with --reference results/reference/<kind>");
    }
    set = load_reference_set(*options.reference);
    const auto representative = read_meta(*options.reference / "meta.json");
    if (!representative || !representative->contains("node")) {
      throw harness_error("run --plan: " + options.reference->string() + " has no representative meta.json with a node");
    }
    node = (*representative)["node"];
  }
  std::vector<std::string> listing;
  std::string assumed;
  const std::size_t planned_gpus =
      options.assume_gpus > 0 ? static_cast<std::size_t>(options.assume_gpus) : node.value("gpus", nlohmann::json::array()).size();
  const auto paired = planned_gpus > 1 ? paired_reference_for(node) : std::nullopt;
  if (options.assume_gpus > 0) {
    // Pairs of an assumed node are joined like the pairs of a reference run of the same GPU that has them.
    const nlohmann::json link = paired ? paired->pair_link : nlohmann::json();
    node = assumed_node(node, options.assume_gpus, link);
    listing.push_back("--assume-gpus=" + std::to_string(options.assume_gpus));
    assumed = " (assumed: " + std::to_string(options.assume_gpus) + (options.assume_gpus == 1 ? " copy" : " copies") + " of GPU 0" +
              (options.assume_gpus > 1 ? ", pairs " + (paired ? "as in " + paired->dir.string() : std::string("unknown")) : "") + ")";
  }
  const node_tiers tiers = tiers_of(node);
  const auto plan = plan_run(families, options, selection_flags(tiers, options), listing, set, paired);
  out << "hdbench run --plan" << (options.verdict ? " --verdict" : "") << ": " << tiers.gpus.size() << " GPU"
      << (tiers.gpus.size() == 1 ? "" : "s") << assumed << ", "
      << (options.verdict                              ? "on every GPU and pair only the cases the checks and gates select"
          : options.full || tiers.gpus.size() < 2 ? "every case on every GPU"
                                                    : "tiered")
      << "\n";
  // A verdict run measures the same cases on every GPU and pair: no class has a sweep of its own.
  if (!options.verdict) {
    for (const auto& c : tiers.classes) {
      out << "  class " << c.key << ": GPUs " << gpu_list(c.gpus) << ", full sweep on GPU " << c.representative << "\n";
    }
    for (const auto& c : tiers.pair_classes) {
      out << "  pair class " << c.key << ": " << c.pairs.size() << " ordered pairs, full sweep on " << c.representative.first
          << ">" << c.representative.second << "\n";
    }
  }
  table_rows rows;
  for (const auto& f : plan.families) rows.push_back({f.family, std::to_string(f.cases), minutes_seconds(f.seconds), f.basis});
  // What the harness takes is known of full runs only (the members', or the default's).
  rows.push_back({"(harness)", "", minutes_seconds(plan.harness_s),
                  options.verdict ? "collect, check, plots, report: a full run's; a verdict run draws fewer figures"
                                  : "collect, check, plots, report"});
  rows.push_back({"total", "", minutes_seconds(plan.total_s), "the run without the build"});
  out << text_table({"family", "cases", "estimate", "basis"}, rows);
  out << confirmation_note(options) << "\n";
  const bool by_family_mean = std::any_of(plan.families.begin(), plan.families.end(),
                                          [](const family_plan& f) { return f.cases > 0 && f.cases_costed == 0; });
  if (by_family_mean && tiers.gpus.size() > 1) {
    out << "note: families without case costs are priced at their set's mean case; the headline and checked cases the\n"
           "other GPUs and pairs keep cost more than that mean, so read those figures as low. Runs from now on record\n"
           "case costs (raw/<family>.costs.jsonl); a set member with them prices every case by itself.\n";
  }
  return 0;
}

}  // namespace hdb
