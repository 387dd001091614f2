// Every family's registration held to its own schema.json without a GPU: on 1, 2 and 8 fake
// devices, default and --quick, every case's kind, label parameters and values, headlines and
// traffic picks are declared (what the shared main checks at start-up and after each case), no
// two cases share a name, and every declared case kind is registered on some node. A label or
// headline that drifts from the declaration fails here, not on the GPU box.
#include "catch_compat.hpp"

#include "hdb/family.hpp"
#include "hdb/contract/declaration.hpp"

#if defined(HDB_HAS_COPY)
#include "copy.hpp"
#endif
#if defined(HDB_HAS_OVERLAP)
#include "overlap.hpp"
#endif
#if defined(HDB_HAS_SYNC)
#include "sync.hpp"
#endif
#if defined(HDB_HAS_P2P)
#include "p2p.hpp"
#endif
#if defined(HDB_HAS_ALLREDUCE)
#include "allreduce.hpp"
#endif

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct family_entry {
  const char* name;
  hdb::family_spec (*make)();
};

std::vector<family_entry> built_families() {
  return {
#if defined(HDB_HAS_COPY)
      {"copy", hdb::copy::family},
#endif
#if defined(HDB_HAS_OVERLAP)
      {"overlap", hdb::overlap::family},
#endif
#if defined(HDB_HAS_SYNC)
      {"sync", hdb::sync::family},
#endif
#if defined(HDB_HAS_P2P)
      {"p2p", hdb::p2p::family},
#endif
#if defined(HDB_HAS_ALLREDUCE)
      {"allreduce", hdb::allreduce::family},
#endif
  };
}

hdb::family_declaration schema_of(const std::string& family) {
  std::ifstream in(std::string(HDB_SOURCE_DIR) + "/bench/" + family + "/schema.json");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return hdb::parse_declaration(std::string_view(text.str()));
}

// n H200-like devices; registration reads only their records (no CUDA call).
hdb::family_env fake_node(int n) {
  hdb::family_env env;
  for (int i = 0; i < n; ++i) {
    env.devices.push_back({i, "GPU-" + std::to_string(i), "H200", "0000:0" + std::to_string(i) + ":00.0", 132,
                           std::size_t{140} << 30, std::size_t{141} << 30});
  }
  return env;
}

// The cases `spec` registers on `env` for these command-line flags, their headlines set by the
// shared main's rule, as a listing (`--benchmark_list_tests`) would.
std::vector<hdb::case_spec> registered_cases(const hdb::family_spec& spec, const hdb::family_declaration& schema,
                                             hdb::family_env& env, const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"hdbench-" + spec.name, "--benchmark_list_tests"};
  args.insert(args.end(), flags.begin(), flags.end());
  const hdb::run_options options = hdb::parse_run_options(args, spec.flags);
  std::vector<hdb::case_spec> cases;
  hdb::case_registry registry(cases);
  spec.register_cases(options, env, registry);
  hdb::set_headlines(schema, cases);
  return cases;
}

}  // namespace

TEST_CASE("every family registers only what its schema.json declares", "[schema][registration]") {
  const auto families = built_families();
  REQUIRE_FALSE(families.empty());
  for (const family_entry& f : families) {
    const hdb::family_declaration schema = schema_of(f.name);
    std::set<std::string> kinds_seen;
    for (int gpus : {1, 2, 8}) {
      for (bool quick : {false, true}) {
        INFO(f.name << " on " << gpus << " GPUs" << (quick ? ", --quick" : ""));
        const hdb::family_spec spec = f.make();
        CHECK(spec.name == schema.family);
        hdb::family_env env = fake_node(gpus);
        const auto cases = registered_cases(spec, schema, env, quick ? std::vector<std::string>{"--quick"} : std::vector<std::string>{});
        CHECK_FALSE(cases.empty());
        std::set<std::string> names;
        for (const hdb::case_spec& c : cases) {
          INFO("case " << c.name);
          CHECK(hdb::check_registration(schema, c.kind, c.labels).value_or("") == "");
          CHECK(hdb::check_outputs(schema, c.kind, {}, c.headline_metrics, c.traffic).value_or("") == "");
          CHECK(names.insert(c.name).second);
          CHECK_NOTHROW(hdb::format_label(c, env));
          kinds_seen.insert(c.kind);
        }
      }
    }
    for (const hdb::case_decl& declared : schema.cases) {
      INFO(f.name << ": declared case kind " << declared.name);
      CHECK(kinds_seen.contains(declared.name));
    }
  }
}

namespace {

// The extra flags of a third run per family: its own size lists (and stream, rank, interval lists),
// so a gate whose value is relative to the sweep ("largest") is pinned on a run with --sizes too.
std::vector<std::string> custom_flags(const std::string& family) {
  if (family == "copy") return {"--sizes=4K,1M,64M", "--latency-sizes=64,4K"};
  if (family == "overlap") return {"--streams=2,4", "--chunks=S,8"};
  if (family == "sync") return {"--trap-every=8,64"};
  if (family == "p2p") return {"--sizes=64K,16M", "--latency-sizes=64", "--aggregate-sizes=64M"};
  if (family == "allreduce") return {"--sizes=8:1M:x4", "--ranks=1,2"};
  return {};
}

// Every case that gates, one line each ("<name> headline=<metrics>"), for each run of the family:
// 1, 2 and 8 fake GPUs; default, --quick and custom_flags.
std::string gating_cases(const family_entry& f) {
  const hdb::family_declaration schema = schema_of(f.name);
  std::string text;
  for (int gpus : {1, 2, 8}) {
    for (const char* run : {"default", "quick", "custom"}) {
      const hdb::family_spec spec = f.make();
      const std::string kind = run;
      const std::vector<std::string> flags = kind == "quick"    ? std::vector<std::string>{"--quick"}
                                             : kind == "custom" ? custom_flags(f.name)
                                                                : std::vector<std::string>{};
      hdb::family_env env = fake_node(gpus);
      const auto cases = registered_cases(spec, schema, env, flags);
      text += "# " + std::to_string(gpus) + " GPUs, " + run + "\n";
      for (const hdb::case_spec& c : cases) {
        if (c.headline_metrics.empty()) continue;
        text += c.name + " headline=";
        for (std::size_t i = 0; i < c.headline_metrics.size(); ++i) text += (i ? "," : "") + c.headline_metrics[i];
        text += "\n";
      }
    }
  }
  return text;
}

}  // namespace

// fixtures/gating/<family>.txt was written by the families' own C++ before the headlines moved into
// schema.json's gates, so the gates are pinned to select exactly what the code did. After an
// intended change of a gate, regenerate and review:
//   HDB_UPDATE_GOLDEN=1 build/<preset>/tests/registration_tests "[gates]"
TEST_CASE("every family gates exactly the cases of its golden list", "[schema][registration][gates]") {
  for (const family_entry& f : built_families()) {
    INFO(f.name);
    const std::string path = std::string(HDB_SOURCE_DIR) + "/tests/common/fixtures/gating/" + f.name + ".txt";
    const std::string text = gating_cases(f);
    if (std::getenv("HDB_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << text;
    std::ifstream in(path);
    REQUIRE(in.good());
    std::stringstream golden;
    golden << in.rdbuf();
    CHECK(text == golden.str());
  }
}

#if defined(HDB_HAS_COPY)
// What gates is the declaration's alone: the same registered cases, a gate changed in schema.json,
// and the headline moves with it.
TEST_CASE("a gate changed in schema.json alone moves the headline", "[schema][registration][gates]") {
  const hdb::family_declaration schema = schema_of("copy");
  auto source = schema.source;
  bool changed = false;
  for (auto& gate : source["gates"]) {
    if (gate["case"] == "latency") {
      gate["parameters"]["size_bytes"] = "largest";
      gate["parameters"]["direction"] = "h2d";
      changed = true;
    }
  }
  REQUIRE(changed);
  const hdb::family_declaration moved = hdb::parse_declaration(source);
  const hdb::family_spec spec = hdb::copy::family();
  const hdb::run_options options = hdb::parse_run_options({"hdbench-copy", "--benchmark_list_tests"}, spec.flags);
  hdb::family_env env = fake_node(1);
  std::vector<hdb::case_spec> cases;
  hdb::case_registry registry(cases);
  spec.register_cases(options, env, registry);
  const auto latency_headlines = [&](const hdb::family_declaration& d) {
    hdb::set_headlines(d, cases);
    std::vector<std::string> names;
    for (const auto& c : cases) {
      if (c.kind == "latency" && !c.headline_metrics.empty()) names.push_back(c.name);
    }
    return names;
  };
  CHECK(latency_headlines(schema) == std::vector<std::string>{"copy/latency/d2h/pinned/async/size:1/streams:1/gpu:0"});
  CHECK(latency_headlines(moved) == std::vector<std::string>{"copy/latency/h2d/pinned/async/size:4096/streams:1/gpu:0"});
}
#endif
