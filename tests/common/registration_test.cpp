// Every family's registration held to its own schema.json without a GPU: on 1, 2 and 8 fake
// devices, default and --quick, every case's kind, label parameters and values, headlines and
// traffic picks are declared (what the shared main checks at start-up and after each case), no
// two cases share a name, and every declared case kind is registered on some node. A label or
// headline that drifts from the declaration fails here, not on the GPU box.
#include "catch_compat.hpp"

#include "hdb/family.hpp"
#include "hdb/host/declaration.hpp"

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
        std::vector<std::string> args = {"hdbench-" + spec.name, "--benchmark_list_tests"};
        if (quick) args.emplace_back("--quick");
        const hdb::run_options options = hdb::parse_run_options(args, spec.flags);
        hdb::family_env env = fake_node(gpus);
        std::vector<hdb::case_spec> cases;
        hdb::case_registry registry(cases);
        spec.register_cases(options, env, registry);
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
