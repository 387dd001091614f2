#include "hdb/harness/cli.hpp"

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <hdb/build_info.hpp>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/data/collect.hpp"
#include "hdb/harness/verdict/compare.hpp"
#include "hdb/harness/data/installed_declarations.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/verdict/fleet.hpp"
#include "hdb/harness/verdict/prometheus_render.hpp"
#include "hdb/harness/report/plots.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/report/report.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/run/runner.hpp"
#include "hdb/harness/report/schema_doc.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

// Written by the SIGINT/SIGTERM handler, read by the runner's wait loop: a signal handler
// can only communicate through a lock-free global, so this is the one mutable global.
volatile std::sig_atomic_t interrupted = 0;

extern "C" void on_interrupt(int /*signal*/) { interrupted = 1; }

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

fs::path existing_run_dir(const std::string& text) {
  const fs::path dir(text);
  if (!fs::is_directory(dir)) throw harness_error("not a directory: " + text);
  return dir;
}

// What a command prints, as the command line names it: --format, and --prometheus DIR (check, fleet).
struct output_flags {
  std::string format = "text";
  std::string prometheus;
};

// Each command's options as the library takes them, and beside them what the command line gives
// as text until it is read (formats, percentages, run lists).
struct parsed_cli {
  suite_run_options run;
  std::string run_dir;  // collect / report / plot / check
  std::string doc_check, doc_update;  // schema-doc
  bool doc_json = false;              // schema-doc --json
  std::string run_reference;                            // hdbench run --plan --reference
  std::string run_confirm{default_confirm};             // hdbench run --confirm
  bool per_gpu_plots = false;                           // hdbench run / plot
  // hdbench compare
  compare_options compare;
  std::vector<std::string> compared_runs;  // BASELINE [BASELINE...] CURRENT
  std::string compare_format = "text";
  std::string threshold;  // compare, reference validate; empty: 1 % with known noise, 5 % from repetitions alone
  // hdbench check
  check_options check;
  output_flags check_output;
  bool check_no_files = false;
  // hdbench reference add|learn|validate
  validate_options validate;
  std::string set_dir, plant;
  std::vector<std::string> reference_runs;
  bool representative = false;
  // hdbench fleet
  fleet_options fleet;
  output_flags fleet_output;
  std::vector<std::string> fleet_dirs;
  std::string fleet_out, fleet_learn;
  bool fleet_nodelist = false, fleet_no_plots = false;
};

// --threshold is a percentage ("5" or "5%"), unlike --alpha (a fraction): a value that reads like
// a fraction (0 < value < 0.5 without '%') is used as written, with one warning line on stderr.
double threshold_flag(const std::string& text, const char* command) {
  const auto parsed = parse_percent_flag(text, "--threshold");
  if (!parsed.warning.empty()) std::cerr << command << ": " << parsed.warning << "\n";
  return parsed.fraction;
}

int reference_command(const CLI::App& reference, const parsed_cli& cli) {
  const fs::path set_dir(cli.set_dir);
  if (reference.got_subcommand("add")) {
    const auto added = add_to_reference_set(set_dir, existing_run_dir(cli.reference_runs.front()), cli.representative);
    std::cerr << "hdbench reference: added " << added.run_id << " to " << set_dir.string() << " (" << added.rows_kept << " of "
              << added.rows_total << " rows kept" << (added.representative ? "; representative run" : "") << "); noise.json: "
              << added.model.members.size() << " runs, " << added.model.metrics.size() << " metrics\n";
    return 0;
  }
  if (reference.got_subcommand("learn")) {
    const auto model = learn_reference_set(set_dir);
    std::cerr << "hdbench reference: " << (set_dir / "noise.json").string() << ": " << model.members.size() << " runs, "
              << model.metrics.size() << " metrics, " << describe(model.kind) << "\n";
    return 0;
  }
  auto options = cli.validate;
  if (!cli.threshold.empty()) options.statistics.threshold = threshold_flag(cli.threshold, "hdbench reference validate");
  if (!cli.plant.empty()) options.plant = parse_percent(cli.plant);
  if (options.plant && !(*options.plant > 0 && *options.plant < 1)) throw harness_error("--plant must be between 0% and 100%");
  const std::vector<fs::path> extra(cli.reference_runs.begin(), cli.reference_runs.end());
  const auto result = validate_reference_set(existing_run_dir(cli.set_dir), extra, options);
  std::cout << render_validation(result);
  return result.false_verdicts == 0 && result.missed == 0 ? 0 : 1;
}

// --format prometheus and --prometheus DIR (check, fleet): one rendering, written to DIR/hdbench.prom
// when asked, whose WARN counts go on from the textfile it replaces; "" when neither was asked for.
template <class Report>
std::string prometheus_output(const Report& report, const std::string& dir, output_format format) {
  if (dir.empty()) return format == output_format::prometheus ? render_prometheus(report) : std::string();
  const auto text = render_prometheus(report, read_prometheus_textfile(dir));
  write_prometheus_textfile(dir, text);
  return text;
}

// The node verdict; exit 0 for PASS or WARN, 1 for any FAIL (bad input throws: exit 2).
int check_command(const parsed_cli& cli) {
  const auto format = parse_output_format(cli.check_output.format, check_formats);
  const auto dir = existing_run_dir(cli.run_dir);
  const auto report = check_run(dir, cli.check);
  if (!cli.check_no_files) {
    try {
      write_check_files(dir, report);
    } catch (const std::exception& e) {
      std::cerr << "hdbench check: check.txt and check.json not written (" << e.what() << ")\n";
    }
  }
  const auto prometheus = prometheus_output(report, cli.check_output.prometheus, format);
  std::cout << (format == output_format::prometheus ? prometheus : render_check(report, format));
  return report.exit_code();
}

// Many nodes' runs against their kind's set or their peers; exit 1 when any node FAILs. --nodelist
// prints only the failing nodes' Slurm names (hostlist form, for scontrol); hdbench fleet never drains.
int fleet_command(const parsed_cli& cli) {
  auto options = cli.fleet;
  options.plots = !cli.fleet_no_plots;
  const auto format = parse_output_format(cli.fleet_output.format, fleet_formats);
  const std::vector<fs::path> args(cli.fleet_dirs.begin(), cli.fleet_dirs.end());
  std::vector<fs::path> skipped;
  const auto run_dirs = fleet_run_dirs(args, &skipped);
  for (const auto& dir : skipped) std::cerr << "hdbench fleet: " << dir.string() << " left out: an hdbench fleet output, not a node\n";
  const auto report = grade_fleet(run_dirs, options);
  const fs::path out = cli.fleet_out.empty() ? default_fleet_out(args) : fs::path(cli.fleet_out);
  const auto document = to_json(report).dump() + "\n";
  write_fleet_outputs(report, document, out, options.plots, std::cerr);
  if (!cli.fleet_learn.empty()) {
    for (const auto& line : learn_fleet_sets(report, cli.fleet_learn)) std::cerr << line << "\n";
  }
  const auto prometheus = prometheus_output(report, cli.fleet_output.prometheus, format);
  if (cli.fleet_nodelist) {
    const auto list = slurm_hostlist(report.failing_slurm_nodes());
    if (!list.empty()) std::cout << list << "\n";
  } else {
    std::cout << (format == output_format::json         ? document
                  : format == output_format::prometheus ? prometheus
                                                        : render_fleet(report, format));
  }
  std::cerr << fleet_summary_line(report) << "\n";
  return report.exit_code();
}

// Prints the generated section of docs/csv-schema.md; --check FILE exits 1 when FILE's section
// differs, --update FILE rewrites it; --json prints results.csv's core columns and statistics.
int schema_doc_command(const parsed_cli& cli) {
  if (cli.doc_json) {
    std::cout << results_csv_record().dump(2) << "\n";
    return 0;
  }
  const auto sources = installed_sources(cli.run.bin_dir);
  const auto section = schema_doc(installed_declarations(sources.manifest, sources.schema_dir));
  if (cli.doc_check.empty() && cli.doc_update.empty()) {
    std::cout << section;
    return 0;
  }
  const fs::path file = cli.doc_check.empty() ? cli.doc_update : cli.doc_check;
  const auto document = read_text_file(file);
  const auto wanted = replace_schema_doc(document, section);
  if (!cli.doc_update.empty()) {
    if (wanted != document) atomic_write_file(file, wanted);
    return 0;
  }
  if (wanted == document) return 0;
  std::cerr << "hdbench schema-doc: " << file.string()
            << "'s generated section differs from the declarations; run `hdbench schema-doc --update " << file.string()
            << "`\n";
  return 1;
}

int dispatch(const CLI::App& app, parsed_cli& cli) {
  if (app.got_subcommand("run")) {
    if (cli.run.manifest.empty()) cli.run.manifest = cli.run.bin_dir / "suite.json";
    install_interrupt_handler();
    cli.run.cancel = &interrupted;
    cli.run.plots = plot_options_from_environment();
    cli.run.plots.per_gpu = cli.per_gpu_plots;
    if (!cli.run_reference.empty()) cli.run.reference = fs::path(cli.run_reference);
    cli.run.confirm_pauses = parse_confirm_pauses(cli.run_confirm);
    if (cli.run.assume_gpus > 0 && !cli.run.plan_only) throw harness_error("--assume-gpus plans a node: add --plan");
    if (cli.run.plan_only) return print_plan(cli.run, std::cout);
    return run_suite(cli.run, std::cerr);
  }
  if (app.got_subcommand("collect")) {
    const auto collected = collect_and_write(existing_run_dir(cli.run_dir), installed_sources(cli.run.bin_dir));
    std::cerr << "hdbench: wrote " << (fs::path(cli.run_dir) / "results.csv").string() << " (" << collected.rows.size()
              << " rows)\n";
    return 0;
  }
  if (app.got_subcommand("schema-doc")) return schema_doc_command(cli);
  if (app.got_subcommand("check")) return check_command(cli);
  if (app.got_subcommand("fleet")) return fleet_command(cli);
  if (app.got_subcommand("report")) {
    write_report(existing_run_dir(cli.run_dir));
    std::cerr << "hdbench: wrote " << (fs::path(cli.run_dir) / "report.md").string() << "\n";
    return 0;
  }
  if (app.got_subcommand("plot")) {
    const auto dir = existing_run_dir(cli.run_dir);
    auto plots = plot_options_from_environment();
    plots.per_gpu = cli.per_gpu_plots;
    // The node figures read check.json. A run's own is what its machine said (against the set or
    // reference it was graded with), so only a run made before check.json existed gets one here.
    if (!fs::exists(dir / "check.json")) write_check(dir, std::cerr);
    const bool drawn = draw_plots(dir, plots, std::cerr);
    if (drawn) write_report(dir);  // the report links the plots that exist
    return 0;
  }
  if (const auto* reference = app.get_subcommand("reference"); reference->parsed()) return reference_command(*reference, cli);
  auto options = cli.compare;
  if (!cli.threshold.empty()) options.statistics.threshold = threshold_flag(cli.threshold, "hdbench compare");
  options.format = parse_output_format(cli.compare_format, compare_formats);
  if (cli.compared_runs.size() < 2) throw harness_error("compare needs BASELINE [BASELINE...] CURRENT (at least two runs)");
  const std::vector<fs::path> baselines(cli.compared_runs.begin(), cli.compared_runs.end() - 1);
  const auto result = compare_runs(baselines, cli.compared_runs.back(), options);
  std::cout << result.output;
  if (!result.error.empty()) std::cerr << "hdbench compare: " << result.error << "\n";
  return result.exit_code;
}

void add_run(CLI::App& app, parsed_cli& cli) {
  auto* run = app.add_subcommand("run",
                                 "run the benchmark families into results/<run-id>/; flags after -- go to every family, "
                                 "--<family>.flag=V to that family only as --flag=V (an unknown family is an error)");
  run->add_option("--families", cli.run.families, "comma-separated families (default: all in the manifest)")->delimiter(',');
  run->add_flag("--quick", cli.run.quick, "short sweep (adds each family's quick flags)");
  run->add_option("--out", cli.run.out_base, "base directory of run directories")->capture_default_str();
  run->add_option("--timeout-scale", cli.run.timeout_scale, "multiply every family's timeout")->check(CLI::Range(0.01, 100.0));
  run->add_option("--manifest", cli.run.manifest, "suite manifest (default: suite.json beside hdbench)")->check(CLI::ExistingFile);
  run->add_option("--run-dir-file", cli.run.run_dir_file, "write the run directory's path to this file once it exists (for scripts)");
  run->add_flag("--per-gpu-plots", cli.per_gpu_plots, "sweep figures for every GPU, not one per class");
  run->add_flag("--full", cli.run.full, "every case on every GPU and pair (default on several GPUs: tiered, docs/harness.md)");
  run->add_flag("--verdict", cli.run.verdict,
                "only what check grades and compare gates: each family's cases its declaration's checks and gates select, "
                "on every GPU (no sweeps); with --plan, the plan of that run");
  run->add_option("--stopping", cli.run.stopping,
                  "how each case's repetitions end: precision (what check and compare read repeats until its median is "
                  "sure enough: docs/methodology.md), fixed, or auto (precision with --verdict, else fixed)")
      ->check(CLI::IsMember({"auto", "precision", "fixed"}));
  run->add_option("--confirm", cli.run_confirm,
                  "seconds to pause before each further try of the cases behind a FAIL (a figure FAILs only when it fails "
                  "on every try), or off to measure once")
      ->capture_default_str();
  run->add_flag("--plan", cli.run.plan_only, "print each family's cases and estimated time, measure nothing");
  run->add_option("--assume-gpus", cli.run.assume_gpus, "with --plan: plan for this many GPUs of this node's (or --reference's) kind")
      ->check(CLI::Range(1, 1024));
  run->add_option("--reference", cli.run_reference, "with --plan: the reference set whose runs price the cases (default: the node's kind)");
  run->add_option("--bin-dir", cli.run.bin_dir, "where the family binaries and hdbench-probe are (default: beside hdbench)")
      ->check(CLI::ExistingDirectory);
}

// --alpha: a family-wise significance level (check, compare, fleet, reference validate), each
// command saying over what.
void add_alpha(CLI::App& command, double& alpha, const std::string& what) {
  command.add_option("--alpha", alpha, what)->capture_default_str()->check(CLI::Range(1e-9, 0.5));
}

// --reference (where the sets are), --format and --prometheus DIR of check and fleet.
void add_verdict_flags(CLI::App& command, std::optional<fs::path>& reference, output_flags& output, const std::string& formats,
                       const std::string& prometheus) {
  command.add_option("--reference", reference,
                     "a reference set or a directory of sets (default $HDBENCH_REFERENCE_DIR, else results/reference)");
  command.add_option("--format", output.format, formats)->capture_default_str();
  command.add_option("--prometheus", output.prometheus, prometheus)->check(CLI::ExistingDirectory);
}

void add_check(CLI::App& app, parsed_cli& cli) {
  auto* check = app.add_subcommand(
      "check", "is this node healthy? each GPU's figures against the reference set of its kind, and its links, clocks and "
               "neighbours; exit 1 on any FAIL");
  check->add_option("dir", cli.run_dir, "run directory")->required();
  add_verdict_flags(*check, cli.check.reference, cli.check_output, "text, junit, json or prometheus (docs/machine-output.md)",
                    "also write DIR/hdbench.prom for node_exporter's textfile collector (--collector.textfile.directory)");
  check->add_flag("--no-files", cli.check_no_files, "print only: do not write DIR/check.txt and DIR/check.json");
  add_alpha(*check, cli.check.alpha,
            "compare's significance level, family-wise over the gating headlines (check reads compare's decisions)");
}

void add_fleet(CLI::App& app, parsed_cli& cli) {
  auto* fleet = app.add_subcommand(
      "fleet", "many nodes' runs (check.json, meta.json) graded against their kind's set or their peers; names the nodes and "
               "GPUs that differ; exit 1 when any node FAILs (docs/fleet.md)");
  fleet->add_option("dirs", cli.fleet_dirs, "run directories, or parents of run directories (one per node)")->required();
  add_verdict_flags(*fleet, cli.fleet.reference, cli.fleet_output, "text, junit (one testcase per node), json or prometheus",
                    "also write DIR/hdbench.prom, every node's series, for node_exporter's textfile collector");
  add_alpha(*fleet, cli.fleet.alpha, "family-wise level over every node x figure graded against peers");
  fleet->add_option("--out", cli.fleet_out, "where fleet.json, fleet.txt and plots/ go (default: the first DIR's parent/fleet-<utc>)");
  fleet->add_flag("--nodelist", cli.fleet_nodelist, "print only the failing nodes, by Slurm's names for them (meta.json host.slurm_node_name, else the hostname), in Slurm's hostlist form (for scontrol)");
  fleet->add_option("--learn", cli.fleet_learn, "write a reference set per kind under this directory from the nodes that did not FAIL");
  fleet->add_flag("--no-plots", cli.fleet_no_plots, "write fleet.json and fleet.txt only");
}

void add_compare(CLI::App& app, parsed_cli& cli) {
  auto* compare = app.add_subcommand(
      "compare", "compare a run with one or more baseline runs (3+ give the run-to-run noise); exit 1 on a headline regression");
  compare->add_option("runs", cli.compared_runs,
                      "BASELINE [BASELINE...] CURRENT: run directories, results.csv files or reference sets (all their runs)")
      ->required();
  compare->add_option("--threshold", cli.threshold,
                      "percent: 5 or 5% (not 0.05, unlike --alpha); the change of the median that matters (default 1% with "
                      "known noise, 5% from one run's repetitions)");
  compare->add_option("--noise-model", cli.compare.noise_model,
                      "auto (the set named as baseline, else the reference set of the current run's kind), none, or a noise.json")
      ->capture_default_str();
  compare->add_option("--reference", cli.compare.reference,
                      "where --noise-model auto looks for sets (default $HDBENCH_REFERENCE_DIR, else results/reference)");
  add_alpha(*compare, cli.compare.statistics.alpha, "significance level (family-wise over headline metrics with several baselines)");
  compare->add_option("--format", cli.compare_format, "text, markdown, junit or json (docs/machine-output.md)")->capture_default_str();
  compare->add_flag("--all", cli.compare.all, "also show non-headline metrics (never affect the exit status)");
}

void add_reference(CLI::App& app, parsed_cli& cli) {
  auto* reference = app.add_subcommand("reference", "build and check reference sets: several runs of one machine kind and their noise model");
  reference->require_subcommand(1);
  auto* add = reference->add_subcommand("add", "copy a run compactly into SET_DIR/runs/ and re-learn SET_DIR/noise.json");
  add->add_option("set", cli.set_dir, "reference set directory (created if missing)")->required();
  add->add_option("run", cli.reference_runs, "run directory")->required()->expected(1);
  add->add_flag("--representative", cli.representative, "also make it the set's full top-level run (report, plots)");
  reference->add_subcommand("learn", "re-learn SET_DIR/noise.json from SET_DIR/runs/")
      ->add_option("set", cli.set_dir, "reference set directory")
      ->required();
  auto* validate = reference->add_subcommand(
      "validate", "leave-one-out inside the set, extra runs against it, planted changes; exit 1 on a false verdict or a miss");
  validate->add_option("set", cli.set_dir, "reference set directory")->required();
  validate->add_option("runs", cli.reference_runs, "extra runs of the same kind to judge against the whole set");
  validate->add_option("--plant", cli.plant, "make every gating headline this much worse in a copy (e.g. 5%) and expect SLOWER");
  validate->add_option("--threshold", cli.threshold, "percent: 5 or 5%, as compare's (default 1%)");
  add_alpha(*validate, cli.validate.statistics.alpha, "as compare's");
}

}  // namespace

int cli_main(int argc, char** argv) {
  // Everything after `--` goes verbatim to the family binaries, so CLI11 never sees it.
  std::vector<std::string> args(argv, argv + argc);
  parsed_cli cli;
  cli.run.command_line = args;
  cli.run.bin_dir = own_directory();
  const auto separator = std::find(args.begin() + 1, args.end(), "--");
  if (separator != args.end()) {
    cli.run.extra_flags.assign(separator + 1, args.end());
    args.erase(separator, args.end());
  }

  CLI::App app("hdbench: measure how this GPU node moves data, and compare runs", "hdbench");
  app.set_version_flag("--version", std::string("hdbench ") + build_info::version + " (" + build_info::git_revision + ", " +
                                        build_info::build_type + ")");
  app.require_subcommand(1);
  add_run(app, cli);
  for (const auto* name : {"collect", "report", "plot"}) {
    const std::string what = std::string(name) == "collect" ? "rebuild results.csv (and meta.json's families) from raw/"
                             : std::string(name) == "report" ? "write report.md"
                                                             : "draw plots/ with plots/plot_run.py";
    auto* command = app.add_subcommand(name, what);
    command->add_option("dir", cli.run_dir, "run directory")->required();
    if (std::string(name) == "plot") {
      command->add_flag("--per-gpu-plots", cli.per_gpu_plots, "sweep figures for every GPU, not one per class");
    }
  }
  add_compare(app, cli);
  add_check(app, cli);
  add_fleet(app, cli);
  add_reference(app, cli);
  auto* doc = app.add_subcommand("schema-doc", "print the section of docs/csv-schema.md generated from the declarations");
  auto* check = doc->add_option("--check", cli.doc_check, "exit 1 when this file's generated section differs");
  auto* update = doc->add_option("--update", cli.doc_update, "rewrite this file's generated section")->excludes(check);
  doc->add_flag("--json", cli.doc_json,
                "print results.csv's core columns (name, type, in order around the parameters) and statistics as JSON, "
                "what meta.json records as results_csv")
      ->excludes(check)
      ->excludes(update);

  try {
    std::vector<char*> cli_argv;
    for (auto& arg : args) cli_argv.push_back(arg.data());
    app.parse(static_cast<int>(cli_argv.size()), cli_argv.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "hdbench: " << e.what() << " (see hdbench --help)\n";
    return 2;
  }
  if (!cli.run.extra_flags.empty() && !app.got_subcommand("run")) {
    std::cerr << "hdbench: flags after -- are only for `hdbench run`\n";
    return 2;
  }
  try {
    return dispatch(app, cli);
  } catch (const harness_error& e) {
    std::cerr << "hdbench: " << e.what() << "\n";
    return 2;
  } catch (const declaration_error& e) {  // a bad declaration is unusable input, as a harness_error is
    std::cerr << "hdbench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hdbench: internal error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace hdb
