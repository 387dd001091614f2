#!/usr/bin/env python3
"""Mutation check of hdbench's verdict logic: does a test pin every boundary?

Each mutation below is a textual patch of one source line (file, exact old text, new text). For
each in turn the script applies it, rebuilds only the test targets that mutation needs, runs the
relevant test binaries and reverts the line. A mutation is KILLED when a test fails (or the test
binary dies), SURVIVED when every test still passes. Run by hand, not in CI (docs/testing.md,
"Mutation script"):

    cmake --preset ci                     # once: the build directory
    python3 tools/mutate.py               # every mutation (about 25 minutes on 2 cores)
    python3 tools/mutate.py --list        # what would be applied (exit 2: a mutation's line is gone)
    python3 tools/mutate.py --only check-peak-warn-45 --only p2p-same-link

Before the first mutation it builds the targets unmutated and runs the tests: a test that fails
there would "kill" every mutation, so the script stops (exit 2). After the last one it rebuilds
the targets from the restored sources, so the build directory never keeps a mutated binary.

Exit status: 0 every mutation KILLED, 1 one or more SURVIVED, 2 the script could not judge (a
mutation's old text is not exactly once in its file, a build failed, the unmutated tests fail).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The test binaries (CMake target = binary name, in <build>/tests) and the Catch2 test spec each
# runs with ("" = every test case of the binary).
CHECK = ("test_check", "")
COMPARE = ("test_harness", "[compare]")
DECISION = ("test_harness", "[decision]")
FLEET = ("test_fleet", "")
# The 12 committed members as a fleet, through the real binary (--learn among them).
FLEET_MEMBERS = ("hdbench", "ctest:fleet: members peer")
REFERENCE = ("test_reference", "")
OVERLAP = ("overlap_report_tests", "")
P2P = ("p2p_report_tests", "")
COLLECT = ("test_harness", "[collect]")
GATES = ("common_tests", "[gates]")
# A CTest test instead of a Catch2 binary: (the target it needs built, "ctest:" + a -R regex).
STANDIN_DECLARED = ("hdbench-standin", "ctest:standin_family: family_main fails each case")
# The exits a user acts on, on the real entry points (tests/standin_family/exits_test.py).
EXITS_HDBENCH = ("hdbench", "ctest:standin_family: exits of hdbench ")
EXITS_RUN_ALL = ("hdbench", "ctest:standin_family: exits of run_all ")
# The verdict run's stopping rule and gate where they act (tests/standin_family/verdict_run_test.py).
VERDICT_RUN = ("hdbench-standin", "ctest:standin_family: a verdict run stops each case")
# The health check on a private Slurm (about 90 s; it skips, and so cannot kill, without Slurm and root).
HEALTHCHECK = ("hdbench", "ctest:fleet: health check on Slurm")
PLAN = ("test_harness", "plan:*")
PROMETHEUS = ("test_prometheus", "")
TEACHING = ("test_teaching", "")
# The stand-in's runs through `hdbench run`'s confirmation (a transient, a FAIL on every try, --confirm=off).
CONFIRM = ("hdbench", "ctest:standin_family: hdbench run confirms a FAIL")
CANCEL = ("hdbench", "ctest:hdbench: SIGTERM ends a run")
ACTIVITY = ("test_activity", "")


@dataclass
class Mutation:
    name: str
    why: str  # the boundary the mutation moves, and the test that pins it
    file: str  # relative to the repository root
    old: str  # the exact text, once in the file
    new: str
    tests: list = field(default_factory=list)  # (binary, test spec)


DECISION_HPP = "harness/include/hdb/harness/verdict/decision.hpp"
DECISION_CPP = "harness/src/verdict/decision.cpp"
CHECK_CPP = "harness/src/verdict/check.cpp"
STATISTICS_CPP = "harness/src/verdict/run_statistics.cpp"
COMPARISON_CPP = "harness/src/verdict/comparison.cpp"
COLLECT_CPP = "harness/src/data/collect.cpp"
STATISTICS_HPP = "harness/include/hdb/harness/verdict/run_statistics.hpp"
VALIDATE_CPP = "harness/src/verdict/reference_validate.cpp"
FLEET_HPP = "harness/include/hdb/harness/verdict/fleet.hpp"
FLEET_CPP = "harness/src/verdict/fleet.cpp"
FLEET_RENDER_CPP = "harness/src/verdict/fleet_render.cpp"
GRADED_LINE_CPP = "harness/src/verdict/graded_line.cpp"
JUDGING_CPP = "harness/src/verdict/judging.cpp"
RUN_INDEX_CPP = "harness/src/data/run_index.cpp"
RUNNER_CPP = "harness/src/run/runner.cpp"
HEALTH_CPP = "harness/src/verdict/check_health.cpp"
OVERLAP_CPP = "bench/overlap/report.cpp"
P2P_CPP = "bench/p2p/report.cpp"
TEACHING_CPP = "tests/teaching/teaching_check.cpp"
RUNNER_CPP = "harness/src/run/runner.cpp"
PLAN_CPP = "harness/src/run/plan.cpp"
PLOTS_CPP = "harness/src/report/plots.cpp"
PROMETHEUS_CPP = "harness/src/verdict/prometheus_render.cpp"
COMPARE_HPP = "harness/include/hdb/harness/verdict/compare.hpp"
FAMILY_CPP = "bench/family_main/family.cpp"
STOPPING_HPP = "foundation/util/include/hdb/util/stopping.hpp"
DECLARATION_CPP = "foundation/contract/declaration.cpp"
HEALTHCHECK_SH = "share/hdbench/hdbench-healthcheck"

MUTATIONS = [
    # --- check: peaks-only grading -------------------------------------------------------------
    Mutation("check-peak-warn-45", "peaks only: the WARN/FAIL cut at 45 % instead of 50 % (probe 49.9 % FAILs)",
             DECISION_HPP, "inline constexpr double peak_warn_percent = 50;", "inline constexpr double peak_warn_percent = 45;",
             [CHECK, DECISION]),
    Mutation("check-peak-warn-49.5", "peaks only: the WARN/FAIL cut at 49.5 % (probe 49.9 % FAILs)",
             DECISION_HPP, "inline constexpr double peak_warn_percent = 50;", "inline constexpr double peak_warn_percent = 49.5;",
             [CHECK, DECISION]),
    Mutation("check-peak-warn-50.5", "peaks only: the WARN/FAIL cut at 50.5 % (probe 50.1 % WARNs)",
             DECISION_HPP, "inline constexpr double peak_warn_percent = 50;", "inline constexpr double peak_warn_percent = 50.5;",
             [CHECK, DECISION]),
    Mutation("check-peak-pass-64.5", "peaks only: the PASS/WARN cut at 64.5 % (probe 64.9 % WARNs)",
             DECISION_HPP, "inline constexpr double peak_pass_percent = 65;", "inline constexpr double peak_pass_percent = 64.5;",
             [CHECK, DECISION]),
    Mutation("check-peak-pass-65.5", "peaks only: the PASS/WARN cut at 65.5 % (probe 65.1 % PASSes)",
             DECISION_HPP, "inline constexpr double peak_pass_percent = 65;", "inline constexpr double peak_pass_percent = 65.5;",
             [CHECK, DECISION]),
    # --- check: the scatter note ---------------------------------------------------------------
    Mutation("check-scatter-6", "the scatter note from 6x the set's scatter instead of 3x (a 4x scatter is noted)",
             CHECK_CPP, "constexpr double unsteady_scatter_factor = 3.0;", "constexpr double unsteady_scatter_factor = 6.0;",
             [CHECK]),
    Mutation("check-scatter-3.5", "the scatter note from 3.5x (a 3.2x scatter is noted)",
             CHECK_CPP, "constexpr double unsteady_scatter_factor = 3.0;", "constexpr double unsteady_scatter_factor = 3.5;",
             [CHECK]),
    Mutation("check-scatter-2.5", "the scatter note from 2.5x (a 2.8x scatter is not)",
             CHECK_CPP, "constexpr double unsteady_scatter_factor = 3.0;", "constexpr double unsteady_scatter_factor = 2.5;",
             [CHECK]),
    Mutation("check-quick-guard", "the scatter note on a --quick run too (its meta.json says quick: no note)",
             CHECK_CPP, '      if (!meta.value("quick", false)) {', "      {", [CHECK]),
    Mutation("check-scatter-any-grade", "the scatter note on a figure inside or better than the band too",
             CHECK_CPP, "position_in_band(*line.value, line.band->low, line.band->high, *line.direction) != verdict::slower) {",
             "false) {", [CHECK]),
    # --- the one decision (check, compare against a set, fleet) --------------------------------
    Mutation("decision-tolerance-inclusive", "grade_of: SLOWER by exactly the tolerance FAILs (it WARNs: FAIL is beyond it)",
             DECISION_CPP, "case verdict::slower: return !rule.tolerance || worse > *rule.tolerance ? grade::fail : grade::warn;",
             "case verdict::slower: return !rule.tolerance || worse >= *rule.tolerance ? grade::fail : grade::warn;",
             [DECISION, CHECK]),
    Mutation("decision-no-tolerance-warns", "grade_of: SLOWER with no tolerance declared WARNs (the band alone decides: FAIL)",
             DECISION_CPP, "case verdict::slower: return !rule.tolerance || worse > *rule.tolerance ? grade::fail : grade::warn;",
             "case verdict::slower: return rule.tolerance && worse > *rule.tolerance ? grade::fail : grade::warn;",
             [DECISION]),
    Mutation("decision-host-faster-warns", "grade_of: a faster host line WARNs (a faster host PASSes)",
             DECISION_CPP, "case verdict::faster: return rule.host_bound ? grade::pass : grade::warn;",
             "case verdict::faster: return grade::warn;", [DECISION, CHECK]),
    Mutation("decision-faster-passes", "grade_of: a figure better than the band PASSes (it WARNs: a set to renew)",
             DECISION_CPP, "case verdict::faster: return rule.host_bound ? grade::pass : grade::warn;",
             "case verdict::faster: return grade::pass;", [DECISION, CHECK, FLEET]),
    Mutation("decision-lower-is-higher", "position_in_band: lower-is-better read as higher (a slow latency is FASTER)",
             DECISION_CPP, "case better::lower: return above ? verdict::slower : below ? verdict::faster : verdict::same;",
             "case better::lower: return below ? verdict::slower : above ? verdict::faster : verdict::same;",
             [DECISION, CHECK]),
    Mutation("decision-edge-outside", "position_in_band: the band's low edge is outside it",
             DECISION_CPP, "  const bool below = value < low, above = value > high;",
             "  const bool below = value <= low, above = value > high;", [DECISION]),
    Mutation("decision-worse-lower-sign", "worse_by: lower-is-better measured the wrong way round",
             DECISION_CPP, "    case better::lower: return value / centre - 1;", "    case better::lower: return 1 - value / centre;",
             [DECISION, CHECK]),
    Mutation("decision-compare-warn-slower", "compare_verdict: below the band within the tolerance is SLOWER (it is SAME)",
             DECISION_CPP, "  return decision.position == verdict::slower ? verdict::same : decision.position;",
             "  return decision.position;", [DECISION, CHECK]),
    Mutation("compare-node-direction", "compare holds a node to its set as if every figure were higher-is-better "
             "(a latency beyond its 15 % would not be SLOWER)",
             COMPARISON_CPP, "decide_figure(*cmp.current->central, band, cmp.baselines.front()->direction, rule);",
             "decide_figure(*cmp.current->central, band, better::higher, rule);", [CHECK]),
    Mutation("check-no-band-passes", "check: a figure the set has no band for PASSes (it WARNs)",
             CHECK_CPP, "    line.result = grade::warn;\n    line.reason = compared == nullptr ?",
             "    line.result = grade::pass;\n    line.reason = compared == nullptr ?", [CHECK]),
    # --- the judging declaration ----------------------------------------------------------------
    Mutation("judging-run-not-installed", "judging_rule: the run's own tolerance over the installed one",
             JUDGING_CPP, "  if (declaration == nullptr) return {fallback, false};", "  if (true) return {fallback, false};",
             [DECISION, CHECK]),
    Mutation("judging-host-from-fallback", "judging_rule: the host flag from the run's own declaration, not the installed check's",
             JUDGING_CPP, "same_check != nullptr ? same_check->host_bound : fallback.host_bound}, true};",
             "fallback.host_bound}, true};", [DECISION]),
    # --- the graded line's JSON -----------------------------------------------------------------
    Mutation("graded-line-key-misspelt", "to_json(graded_line): 'tolerance' written as 'tolerances'",
             GRADED_LINE_CPP, '{"tolerance", optional_number(line.rule.tolerance)},',
             '{"tolerances", optional_number(line.rule.tolerance)},', [DECISION, CHECK]),
    Mutation("graded-line-band-runs", "graded_line_from_json: the band's runs not read back",
             GRADED_LINE_CPP, "runs && *runs > 0 ? static_cast<std::size_t>(*runs) : 0,", "0,", [DECISION, FLEET]),
    Mutation("graded-line-check-dropped", "to_json(graded_line): the check's label not written (fleet cannot look its rule up)",
             GRADED_LINE_CPP, '{"check", line.check ? json(*line.check) : json(nullptr)},', '{"check", json(nullptr)},',
             [DECISION, CHECK]),
    # --- fleet's grading ------------------------------------------------------------------------
    Mutation("fleet-frozen-tolerance", "fleet judges a current check.json by the tolerance it froze, not the installed one",
             FLEET_CPP, "  const auto judged = judging_rule(judging, line.family, line.check, line.key->metric, line.rule);",
             "  const auto judged = judged_rule{line.rule, false};", [CHECK]),
    Mutation("fleet-set-not-regraded", "fleet keeps a check.json made without the kind's set (peaks only) as it is",
             FLEET_CPP, "    if (l.check_set != summary.set || l.check_set_runs != summary.set_runs) {",
             "    if (false) {", [CHECK]),
    Mutation("fleet-reads-older-check", "fleet grades a check.json of another version instead of refusing it",
             FLEET_CPP, "  if (version == check->end() || !version->is_number_integer() || version->get<int>() != check_json_version) {",
             "  if (false) {", [FLEET]),
    Mutation("fleet-spread-floor-2x", "the peers' spread floor 0.2 % instead of 0.1 %",
             FLEET_HPP, "inline constexpr double fleet_spread_floor = 0.001;", "inline constexpr double fleet_spread_floor = 0.002;",
             [FLEET]),
    Mutation("fleet-spread-floor-half", "the peers' spread floor 0.05 % instead of 0.1 %",
             FLEET_HPP, "inline constexpr double fleet_spread_floor = 0.001;", "inline constexpr double fleet_spread_floor = 0.0005;",
             [FLEET]),
    Mutation("fleet-k-df", "the band's k with the MAD's degrees of freedom 0.5 (peers - 1), not 0.37",
             FLEET_CPP, "  const double df = std::max(1.0, 0.37 * (static_cast<double>(peers) - 1));",
             "  const double df = std::max(1.0, 0.5 * (static_cast<double>(peers) - 1));", [FLEET]),
    Mutation("fleet-k-centre-error", "the band's k without the centre's own error (sqrt(1 + pi / (2 peers)))",
             FLEET_CPP, "  return student_t_quantile(p, df) * std::sqrt(1 + std::numbers::pi / (2 * static_cast<double>(peers)));",
             "  return student_t_quantile(p, df);", [FLEET]),
    Mutation("fleet-min-peers-4", "fewer than 4 peers and a figure is not graded against them (3 suffice)",
             FLEET_HPP, "inline constexpr std::size_t fleet_min_peers = 3;", "inline constexpr std::size_t fleet_min_peers = 4;",
             [FLEET]),
    Mutation("fleet-own-output-a-node", "fleet grades a directory it wrote as a node",
             FLEET_CPP, "bool is_fleet_output(const fs::path& dir) { return fs::exists(dir / fleet_output_marker); }",
             "bool is_fleet_output(const fs::path& dir) { return false && fs::exists(dir / fleet_output_marker); }", [FLEET]),
    Mutation("fleet-out-inside", "the default --out inside the directories graded (where the next glob finds it)",
             FLEET_RENDER_CPP, "  const auto parent = common && common->has_parent_path() ? common->parent_path() : fs::current_path();",
             "  const auto parent = common ? *common : fs::current_path();", [FLEET]),
    Mutation("fleet-learn-trims-warn", "--learn keeps WARN nodes out of the set (a set trimmed to its own band)",
             FLEET_RENDER_CPP, "      if (node.failed > 0) {\n        std::string why;",
             "      if (node.failed > 0 || node.warned > 0) {\n        std::string why;", [FLEET_MEMBERS]),
    Mutation("fleet-hung-node-passes", "a node that wrote meta.json but no check.json is not a FAIL",
             FLEET_CPP, "  if (!check) {\n    node.lines.push_back(node_line(\"check.json\",",
             "  if (!check) {\n    if (false) node.lines.push_back(node_line(\"check.json\",", [FLEET]),
    # --- compare -------------------------------------------------------------------------------
    Mutation("compare-bonferroni-level", "decide_against_runs at level alpha, not alpha / tests",
             STATISTICS_CPP, "  const double level = options.alpha / static_cast<double>(tests);",
             "  const double level = options.alpha;", [COMPARE]),
    Mutation("compare-bonferroni-m", "build_comparisons passes m = 1 to decide_against_runs, not the gating headlines' count",
             COMPARISON_CPP, "std::max<std::size_t>(set.tests, 1), statistics);", "std::size_t{1}, statistics);", [COMPARE]),
    Mutation("compare-bonferroni-all", "with --all, non-gating metrics count as Bonferroni tests too",
             COMPARISON_CPP, "    if (probe.gates() && spread_of(key, runs) && *it->second.central > 0) ++set.tests;",
             "    if (spread_of(key, runs) && *it->second.central > 0) ++set.tests;", [COMPARE]),
    Mutation("compare-one-baseline-slower-unsignificant", "one baseline: SLOWER beyond 5 % without significance",
             STATISTICS_CPP, "  if (significant && worse > threshold) d.result = verdict::slower;",
             "  if (worse > threshold) d.result = verdict::slower;", [COMPARE]),
    Mutation("compare-one-baseline-faster-unsignificant", "one baseline: FASTER beyond 5 % without significance",
             STATISTICS_CPP, "  else if (significant && worse < -threshold) d.result = verdict::faster;",
             "  else if (worse < -threshold) d.result = verdict::faster;", [COMPARE]),
    Mutation("compare-one-baseline-threshold-inclusive", "one baseline: a change of exactly the threshold is SLOWER (beyond it is)",
             STATISTICS_CPP, "  if (significant && worse > threshold) d.result = verdict::slower;",
             "  if (significant && worse >= threshold) d.result = verdict::slower;", [COMPARE]),
    Mutation("compare-one-baseline-faster-threshold-inclusive", "one baseline: a gain of exactly the threshold is FASTER",
             STATISTICS_CPP, "  else if (significant && worse < -threshold) d.result = verdict::faster;",
             "  else if (significant && worse <= -threshold) d.result = verdict::faster;", [COMPARE]),
    Mutation("compare-known-threshold-2", "the default threshold with known noise 2 % instead of 1 % (plain baseline runs)",
             STATISTICS_HPP, "inline constexpr double known_noise_threshold = 0.01;",
             "inline constexpr double known_noise_threshold = 0.02;", [COMPARE]),
    # --- reference validate ----------------------------------------------------------------------
    Mutation("validate-false-swapped", "validate: false SLOWER and false FASTER counted in each other's column",
             VALIDATE_CPP,
             "(v == verdict::slower ? entry.false_slower : v == verdict::faster ? entry.false_faster : entry.same)++;",
             "(v == verdict::slower ? entry.false_faster : v == verdict::faster ? entry.false_slower : entry.same)++;",
             [REFERENCE]),
    Mutation("validate-false-slower-as-faster", "validate: a false SLOWER counted as a false FASTER",
             VALIDATE_CPP,
             "(v == verdict::slower ? entry.false_slower : v == verdict::faster ? entry.false_faster : entry.same)++;",
             "(v == verdict::slower ? entry.false_faster : v == verdict::faster ? entry.false_faster : entry.same)++;",
             [REFERENCE]),
    Mutation("validate-false-faster-as-slower", "validate: a false FASTER counted as a false SLOWER",
             VALIDATE_CPP,
             "(v == verdict::slower ? entry.false_slower : v == verdict::faster ? entry.false_faster : entry.same)++;",
             "(v == verdict::slower ? entry.false_slower : v == verdict::faster ? entry.false_slower : entry.same)++;",
             [REFERENCE]),
    # --- overlap report rules --------------------------------------------------------------------
    Mutation("overlap-min-efficiency-69.5", "overlap: minimum efficiency 69.5 % instead of 70 % (probe 69.9 % is named)",
             OVERLAP_CPP, "constexpr double min_efficiency_percent = 70.0;", "constexpr double min_efficiency_percent = 69.5;",
             [OVERLAP]),
    Mutation("overlap-min-efficiency-70.5", "overlap: minimum efficiency 70.5 % (probe 70.1 % is not named)",
             OVERLAP_CPP, "constexpr double min_efficiency_percent = 70.0;", "constexpr double min_efficiency_percent = 70.5;",
             [OVERLAP]),
    Mutation("overlap-max-efficiency-114.5", "overlap: maximum efficiency 114.5 % (probe 114.9 % is not named)",
             OVERLAP_CPP, "constexpr double max_efficiency_percent = 115.0;", "constexpr double max_efficiency_percent = 114.5;",
             [OVERLAP]),
    Mutation("overlap-max-efficiency-115.5", "overlap: maximum efficiency 115.5 % (probe 115.1 % is named)",
             OVERLAP_CPP, "constexpr double max_efficiency_percent = 115.0;", "constexpr double max_efficiency_percent = 115.5;",
             [OVERLAP]),
    Mutation("overlap-min-efficiency-inclusive", "overlap: exactly 70 % efficiency is named (below it is)",
             OVERLAP_CPP, "    if (entry.second < min_efficiency_percent) {", "    if (entry.second <= min_efficiency_percent) {",
             [OVERLAP]),
    Mutation("overlap-max-efficiency-inclusive", "overlap: exactly 115 % efficiency is named (above it is)",
             OVERLAP_CPP, "    if (entry.second > max_efficiency_percent) {", "    if (entry.second >= max_efficiency_percent) {",
             [OVERLAP]),
    # --- p2p report rules ------------------------------------------------------------------------
    Mutation("p2p-same-link", "p2p: a pair's peers taken over every link, not only pairs with the same link",
             P2P_CPP,
             "if ((o.src != v.src || o.dst != v.dst) && link_class(topology, o.src, o.dst) == link_class(topology, v.src, v.dst)) {",
             "if (o.src != v.src || o.dst != v.dst) {", [P2P]),
    Mutation("p2p-shortfall-0.79", "p2p: a pair named below 79 % of its peers' median, not 80 % (probe 79.75 % is named)",
             P2P_CPP, "constexpr double peer_shortfall = 0.8;", "constexpr double peer_shortfall = 0.79;", [P2P]),
    Mutation("p2p-shortfall-0.81", "p2p: a pair named below 81 % (probe 80.25 % is not named)",
             P2P_CPP, "constexpr double peer_shortfall = 0.8;", "constexpr double peer_shortfall = 0.81;", [P2P]),
    Mutation("p2p-shortfall-inclusive", "p2p: a pair at exactly 80 % of its peers' median is named (below it is)",
             P2P_CPP, "        if (v.value < peer_shortfall * reference) {", "        if (v.value <= peer_shortfall * reference) {",
             [P2P]),
    # --- collect: a row only for what the declaration allows (the binary's own checker) --------
    Mutation("collect-no-registration-check", "collect never applies check_registration: a label with an undeclared "
             "parameter, a value not declared, or a non-number int must fail its case",
             COLLECT_CPP, "    if (const auto problem = check_registration(decl, parsed.case_name, parameters)) parsed.problem = *problem;",
             "    if (const auto problem = check_registration(decl, parsed.case_name, {})) parsed.problem = *problem;", [COLLECT]),
    Mutation("collect-no-counter-check", "collect passes no counters to check_outputs: an undeclared counter must fail "
             "its case, naming it",
             COLLECT_CPP, "check_outputs(decl, kind.name, counters_of(c.runs), headlines, label.traffic)",
             "check_outputs(decl, kind.name, {}, headlines, label.traffic)", [COLLECT]),
    # --- family_main: every case held to its declaration --------------------------------------
    Mutation("family-check-declared", "family_main never calls check_declared: an undeclared counter or traffic pick "
             "of the CPU stand-in must fail its cases",
             "bench/family_main/family.cpp", "    if (!state.error_occurred()) check_declared(state, spec, schema, record);",
             "    if (false && !state.error_occurred()) check_declared(state, spec, schema, record);", [STANDIN_DECLARED]),
    # --- the exits a user acts on (issue 46) --------------------------------------------------
    Mutation("run-all-exit-0", "./run_all.sh exits 0 on a node that check FAILs",
             "run_all.sh", 'exit "$check_status"', "exit 0", [EXITS_RUN_ALL]),
    Mutation("run-crashed-ok", "hdbench run counts a family that crashed (a signal) as ok: exit 0, all families ok",
             RUNNER_CPP, "    case child_end::signalled:\n      status.state = family_state::crashed;",
             "    case child_end::signalled:\n      status.state = family_state::ok;", [EXITS_HDBENCH]),
    Mutation("run-timed-out-ok", "hdbench run counts a family its timeout ended as ok: exit 0, all families ok",
             RUNNER_CPP, "    case child_end::timed_out:\n      status.state = family_state::timed_out;",
             "    case child_end::timed_out:\n      status.state = family_state::ok;", [EXITS_HDBENCH]),
    Mutation("check-failed-row-warns", "check grades a failed case or a crashed family WARN, not FAIL (so check, fleet "
             "and Prometheus call the node fine)",
             CHECK_CPP, "      line.result = grade::fail;\n      line.gpus = gpus_of(row, meta);",
             "      line.result = grade::warn;\n      line.gpus = gpus_of(row, meta);", [EXITS_HDBENCH]),
    Mutation("compare-missing-passes", "compare exits 0 with a gated headline MISSING (lost to a failure)",
             COMPARE_HPP, "return set.slower > 0 || !set.missing.empty() ? 1 : 0;", "return set.slower > 0 ? 1 : 0;",
             [COMPARE, EXITS_HDBENCH]),
    Mutation("compare-family-failure-ignored", "compare lists a headline its crashed or timed-out family lost as only in "
             "the baseline (JUnit skipped, exit 0)",
             COMPARISON_CPP, "  if (current.failed.contains(family_key)) return current.not_ok.at(family_key);",
             "  if (false) return current.not_ok.at(family_key);", [COMPARE, EXITS_HDBENCH]),
    Mutation("healthcheck-timeout-60", "the health check's default timeout reaches slurmd's own 60 s (slurmd kills a "
             "hung check before it drains)",
             HEALTHCHECK_SH, 'echo 1800 || echo 40)', 'echo 1800 || echo 60)', [HEALTHCHECK]),
    Mutation("healthcheck-resume-failed-run", "the health check resumes a node whose run failed after writing a clean check.json",
             HEALTHCHECK_SH, 'if [ -n "$verdict" ] && [ "$verdict" -eq 0 ] && [ "$run_status" -eq 0 ]; then',
             'if [ -n "$verdict" ] && [ "$verdict" -eq 0 ]; then', [HEALTHCHECK]),
    Mutation("plots-orphaned", "a run killed while it draws leaves its plot step running (holding the health check's lock)",
             PLOTS_CPP, "  spec.die_with_parent = true;", "  spec.die_with_parent = false;", [CANCEL]),
    Mutation("stopping-width-eighth", "the stopping rule's interval against an eighth of the tolerance, not a quarter",
             STOPPING_HPP, "static constexpr double tolerance_fraction = 0.25;", "static constexpr double tolerance_fraction = 0.125;",
             [VERDICT_RUN]),
    Mutation("stopping-width-half", "the stopping rule's interval against half the tolerance",
             STOPPING_HPP, "static constexpr double tolerance_fraction = 0.25;", "static constexpr double tolerance_fraction = 0.5;",
             [VERDICT_RUN]),
    Mutation("stopping-check-tolerance-metric", "the stopping rule reads a check's case by its metric's tolerance, not the check's own",
             FAMILY_CPP, "add(check.metric, schema.tolerance(&check, check.metric));",
             "add(check.metric, schema.tolerance(nullptr, check.metric));", [VERDICT_RUN]),
    Mutation("stopping-time-milliseconds", "the stopping rule's time ceiling counted in milliseconds",
             FAMILY_CPP, "stopper.add(counter_values(state), std::chrono::duration<double>(took).count());",
             "stopper.add(counter_values(state), std::chrono::duration<double, std::milli>(took).count());", [VERDICT_RUN]),
    Mutation("stopping-time-4000", "the stopping rule's time ceiling written as 4000 (milliseconds' number, read as seconds)",
             STOPPING_HPP, "double max_seconds = 4;", "double max_seconds = 4000;", [VERDICT_RUN]),
    Mutation("verdict-keeps-unrunnable-gate", "--verdict keeps the gated case that cannot run, not the largest one that can",
             DECLARATION_CPP, "if (gated[i] || (candidates[i].skipped && would_gate[i])) keep[i] = true;",
             "if (would_gate[i]) keep[i] = true;", [VERDICT_RUN]),
    Mutation("headlines-not-derived", "a case's headlines are not the metrics its gates name (a gated case's headline is refused)",
             DECLARATION_CPP, "if (gated) c.headlines.push_back(metric);", "static_cast<void>(gated);", [GATES]),
    Mutation("plan-price-summed-over-gpus", "a case's price in the plan summed over the GPUs a member ran it on (8x on eight)",
             PLAN_CPP, "costs.by_case[key].push_back(seconds / count[key]);", "costs.by_case[key].push_back(seconds);", [PLAN]),
    Mutation("prometheus-ms-scale", "Prometheus: a value in ms scaled as us",
             PROMETHEUS_CPP, '{"ms", "_seconds", 1e-3, "in seconds"},', '{"ms", "_seconds", 1e-6, "in seconds"},', [PROMETHEUS]),
    Mutation("prometheus-percent-scale", "Prometheus: a percentage written as it is, not as a ratio",
             PROMETHEUS_CPP, '{"%", "_ratio", 0.01, "as a ratio"},', '{"%", "_ratio", 1, "as a ratio"},', [PROMETHEUS]),
    Mutation("fleet-heatmap-merges-tolerances", "fleet_plot.json merges the rules of lines with different tolerances",
             FLEET_RENDER_CPP, "return other->direction == line.direction && other->rule.tolerance == line.rule.tolerance &&",
             "return other->direction == line.direction &&", [FLEET]),
    # --- docs/teaching.md's checker: reasons and titles --------------------------------------------
    Mutation("teaching-cause-because", "reasons: 'because' is no causal word (a planted 'because' sentence passes)",
             TEACHING_CPP, 'R"(\\b(because|since|', 'R"(\\b(since|', [TEACHING]),
    Mutation("teaching-cause-so", "reasons: ', so' is no causal word (a planted ', so' sentence passes)",
             TEACHING_CPP, 'therefore|hence|thus)\\b|, so\\b)");', 'therefore|hence|thus)\\b)");', [TEACHING]),
    Mutation("teaching-cause-citation-ignored", "reasons: a citation in the sentence does not back its cause",
             TEACHING_CPP, "if (marker.empty() || s.text.find(citation_mark) != std::string::npos || says_not_measured(s.text)) continue;",
             "if (marker.empty() || says_not_measured(s.text)) continue;", [TEACHING]),
    Mutation("teaching-cause-not-measured-ignored", "reasons: 'not measured' does not mark a cause as unshown",
             TEACHING_CPP, '  return lower.find("not measured") != std::string::npos;',
             '  return false && lower.find("not measured") != std::string::npos;', [TEACHING]),
    Mutation("teaching-cause-one-sentence", "reasons: a paragraph is one sentence (a citation in the sentence before backs a cause)",
             TEACHING_CPP, "    if (ch != '.' && ch != '!' && ch != '?') continue;", "    continue;", [TEACHING]),
    Mutation("teaching-cause-abbreviation", "reasons: 'e.g.' ends a sentence (the citation before it no longer backs the cause after it)",
             TEACHING_CPP, "  return std::any_of(abbreviations.begin(), abbreviations.end(), [&](const std::string& a) {",
             "  return false && std::any_of(abbreviations.begin(), abbreviations.end(), [&](const std::string& a) {", [TEACHING]),
    Mutation("teaching-cause-quotes", "reasons: a quoted claim is read as the page's own reasoning",
             TEACHING_CPP, "  for (auto open = p.text.find('\"'); open != std::string::npos;",
             "  for (auto open = std::string::npos; open != std::string::npos;", [TEACHING]),
    Mutation("teaching-cause-questions", "reasons: a question is read as a claim",
             TEACHING_CPP, '    if (s.text.ends_with("?")) continue;', '    if (false) continue;', [TEACHING]),
    Mutation("teaching-title-this-run-ignored", "titles: 'This run' is ignored, a set figure must quote the median",
             TEACHING_CPP, "      if (set && this_run) {", "      if (false && set && this_run) {", [TEACHING]),
    Mutation("teaching-title-range-unchecked", "titles: a 'This run' number outside the set's range passes",
             TEACHING_CPP, "        if (!(value >= span.low - slack && value <= span.high + slack)) {",
             "        if (false && !(value >= span.low - slack && value <= span.high + slack)) {", [TEACHING]),
    Mutation("teaching-title-median-unchecked", "titles: a title quoting another value than the lesson's passes",
             TEACHING_CPP, "      if (!rounds_to(text, lesson_value)) {", "      if (false && !rounds_to(text, lesson_value)) {", [TEACHING]),
    Mutation("teaching-title-unclaimed", "titles: a measured number with no claim passes",
             TEACHING_CPP, "        if (!claimed) {", "        if (false && !claimed) {", [TEACHING]),
    Mutation("teaching-exercise-missing", "exercises: a lesson without one passes",
             TEACHING_CPP, "  if (l.exercise_line == 0) {", "  if (false && l.exercise_line == 0) {", [TEACHING]),
    Mutation("teaching-exercise-predict", "exercises: one that asks for no prediction passes",
             TEACHING_CPP, "  if (!l.predicts)", "  if (false && !l.predicts)", [TEACHING]),
    Mutation("teaching-exercise-answer", "exercises: one that cites no answer passes",
             TEACHING_CPP, "  if (!l.pending && std::none_of(l.citations", "  if (false && std::none_of(l.citations", [TEACHING]),
    Mutation("teaching-exercise-own-command", "exercises: the lesson's command may run the exercise's answer",
             TEACHING_CPP, "      if (c.exercise != cmd.exercise) continue;", "      if (false) continue;", [TEACHING]),
    Mutation("teaching-command-binary", "commands: a family's binary is no run command",
             TEACHING_CPP, '  if (program.starts_with("hdbench-") && tokens.size() > 1) {',
             '  if (false && program.starts_with("hdbench-") && tokens.size() > 1) {', [TEACHING]),
    Mutation("teaching-title-division", "titles: a ratio's range divides by one end of the divisor only (16.2 falls outside)",
             TEACHING_CPP, "        right = {1 / right.high, 1 / right.low};", "        right = {1 / right.high, 1 / right.high};",
             [TEACHING]),
    # --- confirmation: a FAIL stands only when every try failed --------------------------------
    Mutation("confirm-any-try", "a FAIL stands when any try failed, not every one (a transient FAILs)",
             GRADED_LINE_CPP, "  if (std::all_of(line.attempts.begin(), line.attempts.end(), failed)) {",
             "  if (std::any_of(line.attempts.begin(), line.attempts.end(), failed)) {", [CHECK]),
    Mutation("confirm-transient-pass", "a transient is a PASS, not a WARN (no one hears of it)",
             GRADED_LINE_CPP, '    line.result = grade::warn;\n    line.reason = "first try "',
             '    line.result = grade::pass;\n    line.reason = "first try "', [CHECK]),
    Mutation("confirm-unconfirmed-silent", "a FAIL measured once is not marked unconfirmed (the health check drains it)",
             GRADED_LINE_CPP, "      line.confirmed = confirmation::unconfirmed;", "      line.confirmed = confirmation::none;", [CHECK]),
    Mutation("confirm-first-attempt-read", "readers take each case's first try instead of its last",
             RUN_INDEX_CPP, "row.attempt == last_attempt[case_key_of(row)];", "row.attempt == 1;", [CHECK]),
    Mutation("confirm-stops-after-one", "hdbench run measures a FAIL again only once (a FAIL on every try of two stands)",
             RUNNER_CPP, "line.confirmed == confirmation::unconfirmed || line.confirmed == confirmation::confirmed;",
             "line.confirmed == confirmation::unconfirmed;", [CONFIRM]),
    Mutation("cotenant-gone-fails", "a co-tenant that had left by the run's end still FAILs the node",
             HEALTH_CPP, "} else if (at_end != nullptr && std::none_of(", "} else if (at_end != nullptr && std::any_of(", [CHECK]),
    Mutation("plots-ignore-sigterm", "the plot step draws on after SIGTERM (a batch system's time limit cannot end the run)",
             "harness/src/report/plots.cpp", "  spec.cancel = cancel;", "  spec.cancel = nullptr;", [CANCEL]),
    Mutation("validate-band-verdict", "validate counts a healthy run outside the band within its tolerance as a false SLOWER",
             VALIDATE_CPP, "      const auto v = c.decision.result;", "      const auto v = c.decision.against_band;", [REFERENCE]),
    Mutation("host-steal-counts-guest", "the host's CPU time counts guest time twice (steal's share too small)",
             "harness/src/data/gpu_activity.cpp", "    while (count < 8 && fields >> value) {",
             "    while (count < 10 && fields >> value) {", [ACTIVITY]),
    Mutation("fleet-peers-beat-peak", "fleet's peers PASS a figure every node FAILs against its link's peak",
             FLEET_CPP, "      keep_worse_peak_grade(line, against_peak);\n", "", [FLEET]),
    Mutation("host-note-one-family", "check's host note is the last family's load, not the run's",
             HEALTH_CPP, "    seconds += load.seconds;", "    seconds = load.seconds;", [ACTIVITY]),
]


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def run(cmd, log, timeout=None):
    """Runs cmd, its output appended to `log`; returns the exit status (124 on timeout)."""
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(str(c) for c in cmd)}\n")
        out.flush()
        try:
            return subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            out.write(f"timed out after {timeout} s\n")
            return 124


def build(build_dir, targets, log):
    return run(["cmake", "--build", str(build_dir), "--target", *sorted(targets)], log) == 0


def failed_cases(junit):
    """The test cases (and sections) with a failure or error in a Catch2 junit file."""
    try:
        tree = ET.parse(junit)
    except (ET.ParseError, OSError):
        return None
    names = []
    for case in tree.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            name = case.get("name", "?")
            if name not in names:
                names.append(name)
    return names


def run_tests(build_dir, tests, log, timeout):
    """Runs each (binary, spec); returns the failures as 'binary: test case' lines (empty: all passed)."""
    failures = []
    for binary, spec in tests:
        if spec.startswith("ctest:"):
            regex = spec[len("ctest:"):]
            status = run(["ctest", "--test-dir", str(build_dir), "-R", regex, "--output-on-failure"], log, timeout)
            if status != 0:
                failures.append(f"ctest -R '{regex}': exit {status}")
            continue
        with tempfile.NamedTemporaryFile(suffix=".xml", delete=False) as tmp:
            junit = tmp.name
        try:
            cmd = [str(build_dir / "tests" / binary), *([spec] if spec else []), "-r", "junit", "-o", junit]
            status = run(cmd, log, timeout)
            cases = failed_cases(junit)
        finally:
            os.unlink(junit)
        if status == 0:
            continue
        if cases:
            failures += [f"{binary}: {case}" for case in cases]
        else:
            failures.append(f"{binary}: exit {status} ({'timed out' if status == 124 else 'no failed case in its report: crashed?'})")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default=str(ROOT / "build" / "ci"), help="a configured build directory (default build/ci)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this mutation (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--log", default=None, help="build and test output (default: a file in the build directory)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a test binary may run (default 600)")
    args = parser.parse_args()

    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    unknown = sorted(set(args.only) - {m.name for m in MUTATIONS})
    if unknown:
        print(f"mutate.py: no mutation named {', '.join(unknown)} (--list names them)", file=sys.stderr)
        return 2
    # Every site exactly once, before anything is touched (and for --list: a test runs it, so a
    # mutation whose line was changed without it is found at once, not on the next full run).
    for m in chosen:
        count = (ROOT / m.file).read_text().count(m.old)
        if count != 1:
            print(f"mutate.py: {m.name}: the old text is {count} times in {m.file}, not once: {m.old.strip()!r}", file=sys.stderr)
            return 2
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.why}\n  {m.file}: '{m.old.strip()}' -> '{m.new.strip()}'")
        return 0

    build_dir = Path(args.build_dir).resolve()
    if not (build_dir / "build.ninja").exists() and not (build_dir / "Makefile").exists():
        print(f"mutate.py: {build_dir} is not a configured build directory (cmake --preset ci)", file=sys.stderr)
        return 2
    log = Path(args.log) if args.log else build_dir / "mutate.log"
    log.write_text("")

    signal.signal(signal.SIGTERM, on_signal)
    targets = {binary for m in chosen for binary, _ in m.tests}
    tests = sorted({t for m in chosen for t in m.tests})
    print(f"mutate.py: {len(chosen)} mutation(s); unmutated build of {', '.join(sorted(targets))} (log: {log})", flush=True)
    if not build(build_dir, targets, log):
        print("mutate.py: the unmutated build fails; see the log", file=sys.stderr)
        return 2
    baseline = run_tests(build_dir, tests, log, args.timeout)
    if baseline:
        print("mutate.py: tests fail without any mutation, so no mutation can be judged:", file=sys.stderr)
        for failure in baseline:
            print(f"  {failure}", file=sys.stderr)
        return 2

    results = []
    broken = False
    try:
        for i, m in enumerate(chosen, 1):
            path = ROOT / m.file
            original = path.read_bytes()
            started = time.monotonic()
            print(f"[{i}/{len(chosen)}] {m.name}: {m.file}: '{m.old.strip()}' -> '{m.new.strip()}'", flush=True)
            try:
                path.write_bytes(original.replace(m.old.encode(), m.new.encode(), 1))
                mutant_targets = {binary for binary, _ in m.tests}
                if not build(build_dir, mutant_targets, log):
                    verdict, detail = "BUILD FAILED", ["the mutated source does not build; see the log"]
                    broken = True
                else:
                    failures = run_tests(build_dir, m.tests, log, args.timeout)
                    verdict, detail = ("KILLED", failures) if failures else ("SURVIVED", [m.why])
            finally:
                path.write_bytes(original)  # a new mtime: the next build recompiles the restored line
            results.append((m, verdict))
            print(f"  {verdict} ({time.monotonic() - started:.0f} s)", flush=True)
            for line in detail:
                print(f"    {'by ' if verdict == 'KILLED' else ''}{line}", flush=True)
    except (Interrupted, KeyboardInterrupt) as stop:
        print(f"mutate.py: stopped ({stop or 'interrupted'}); the source is restored", file=sys.stderr)
        broken = True
    finally:
        print(f"mutate.py: rebuilding {', '.join(sorted(targets))} from the restored sources", flush=True)
        if not build(build_dir, targets, log):
            print("mutate.py: the restored build fails; see the log", file=sys.stderr)
            broken = True

    print()
    width = max(len(m.name) for m, _ in results) if results else 0
    for m, verdict in results:
        print(f"{verdict:<12} {m.name:<{width}}  {m.why}")
    killed = sum(1 for _, v in results if v == "KILLED")
    survived = sum(1 for _, v in results if v == "SURVIVED")
    rate = f", kill rate {100 * killed / len(results):.0f} %" if results else ""
    print(f"mutate.py: {len(results)} mutations, {killed} KILLED, {survived} SURVIVED{rate}")
    if broken:
        return 2
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
