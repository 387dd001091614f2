// docs/teaching.md against the committed references (every number, plot link and command), and
// the checker itself on small pages over tests/teaching/fixtures/reference: `mini`, a single run,
// and `miniset`, a set of four made-up members (launch 3.41, 4.18, 4.62, 5.34 µs: median 4.40;
// h2d 55.1, 55.4, 55.5 GB/s, the fourth member lacks the row): one page that holds, and one for
// each way a page can drift. Each reference has a plot and its plots/figures.json (mini: "This
// run" 55.3 GB/s, its one row; miniset: "This run" 4.18 µs, the second member's launch); a test
// that plants another title writes a copy of the fixtures with its own figures.json.
#include <string>
#include <vector>

#include <filesystem>
#include <fstream>

#include "catch_compat.hpp"
#include "hdb/harness/common/files.hpp"
#include "teaching_check.hpp"
#include "test_helpers.hpp"

namespace {

namespace fs = std::filesystem;

const hdb::teaching::sources fixture_sources{HDB_TEST_FIXTURES, fs::path(HDB_TEST_FIXTURES) / "reference",
                                             HDB_TEST_SCHEMA_DIR};

// The exercise that ends the pages below (line 10 of either): a prediction, a command of its own
// and its answer, a citation of `kind`'s launch or pinned h2d row.
std::string exercise(const std::string& command, const std::string& answer) {
  return "\n**Exercise.** Predict it, then run `" + command + "`: " + answer + ".\n";
}

const std::string mini_exercise = exercise(
    "./run_all.sh --families copy -- --benchmark_filter='copy/bandwidth/h2d/pinned/async/size:1073741824/'",
    "55.3 GB/s<!-- cite mini copy/bandwidth direction=h2d host_kind=pinned api=async size_bytes=1G metric=bandwidth -->");

// A page that holds: the run named, one lesson with a citation, a plot, a command and an exercise.
std::string good_page() {
  return "# mini\nRun 20261201T160834Z-vm.\n\n"
         "## 1. Pinned copies\n"
         "Pinned h2d at 55.3 GB/s<!-- cite mini copy/bandwidth direction=h2d host_kind=pinned api=async size_bytes=1G "
         "metric=bandwidth -->.\n"
         "Plot: [h2d](reference/mini/plots/copy_bandwidth_h2d.png).\n\n"
         "`hdbench run --families copy -- --benchmark_filter='copy/bandwidth/h2d/pinned/async/size:1073741824/'`\n" +
         mini_exercise;
}

// A page citing the set: one figure every member holds, one that three of the four hold.
std::string good_set_page() {
  return "# set\n\n"
         "## 1. Launch and copy\n"
         "An empty launch costs 4.4 µs (3.4–5.3 over 4 machines)<!-- cite-set miniset sync/launch api=empty_kernel "
         "metric=launch_time -->.\n"
         "Pinned h2d moves 55.4 GB/s (55.1–55.5 over 3 machines)<!-- cite-set miniset copy/bandwidth direction=h2d "
         "host_kind=pinned api=async size_bytes=1G metric=bandwidth -->.\n"
         "Plot: [launch](reference/miniset/plots/sync_launch.png).\n\n"
         "`hdbench run --families sync,copy -- --benchmark_filter='sync/launch/|copy/bandwidth/h2d/pinned/async/size:1073741824/'`\n" +
         exercise("build/native/bin/hdbench-sync --benchmark_filter=sync/launch/",
                  "4.4 µs (3.4–5.3 over 4 machines)<!-- cite-set miniset sync/launch api=empty_kernel metric=launch_time -->");
}

// The fixtures copied into a fresh directory with `figures` as reference/<kind>/plots/figures.json:
// a planted title and its claims.
class planted_figures {
 public:
  planted_figures(const std::string& kind, const std::string& figures) {
    fs::copy(HDB_TEST_FIXTURES, dir_.path(), fs::copy_options::recursive);
    std::ofstream(dir_.path() / "reference" / kind / "plots" / "figures.json") << figures;
  }
  [[nodiscard]] hdb::teaching::sources where() const {
    return {dir_.path(), dir_.path() / "reference", HDB_TEST_SCHEMA_DIR};
  }

 private:
  hdb_test::temp_dir dir_;
};

// A figures.json of one figure, `file`, with this title and claims (a JSON list).
std::string one_figure(const std::string& file, const std::string& title, const std::string& claims) {
  return R"({"figures": [{"name": "planted", "title": ")" + title + R"(", "claims": )" + claims + R"(, "files": [")" + file +
         R"("]}]})";
}

// A claim of the miniset launch row, as sync.py records it.
std::string launch_claim(const std::string& text, const std::string& value) {
  return R"({"text": ")" + text + R"(", "value": )" + value +
         R"(, "formula": "a", "cites": [{"family": "sync", "case": "launch", "metric": "launch_time", "statistic": "median", )"
         R"("device": 0, "api": "empty_kernel"}]})";
}

std::vector<std::string> set_page_problems(const std::string& title, const std::string& claims) {
  const planted_figures planted("miniset", one_figure("sync_launch.png", title, claims));
  return hdb::teaching::check_page(good_set_page(), planted.where());
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

std::string only_problem(const std::string& page) {
  const auto problems = hdb::teaching::check_page(page, fixture_sources);
  REQUIRE(problems.size() == 1);
  return problems.front();
}

}  // namespace

TEST_CASE("docs/teaching.md: every number, plot and command matches the committed references") {
  const fs::path docs = fs::path(HDB_SOURCE_DIR) / "docs";
  const auto problems = hdb::teaching::check_page(
      hdb::read_text_file(docs / "teaching.md"),
      {docs, fs::path(HDB_SOURCE_DIR) / "results" / "reference", HDB_TEST_SCHEMA_DIR});
  for (const auto& problem : problems) FAIL_CHECK(problem);
}

TEST_CASE("teaching check: a page whose citations hold passes") {
  CHECK(hdb::teaching::check_page(good_page(), fixture_sources).empty());
  // The same figure in another unit of the row's kind holds too.
  CHECK(hdb::teaching::check_page(replaced(good_page(), "55.3 GB/s", "0.055 TB/s"), fixture_sources).empty());
}

TEST_CASE("teaching check: a number that differs at the precision written fails") {
  const auto problem = only_problem(replaced(good_page(), "55.3 GB/s", "55.4 GB/s"));
  CHECK(hdb_test::contains(problem, "line 5: cite mini copy/bandwidth"));
  CHECK(hdb_test::contains(problem, "the page says 55.4 GB/s"));
  CHECK(hdb_test::contains(problem, "55.3 at the precision written"));
  // More digits than the value rounds to is a different number too.
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "55.3 GB/s", "55.30 GB/s")), "55.31 at the precision"));
}

TEST_CASE("teaching check: a unit that does not fit the row fails") {
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "55.3 GB/s", "55.3 ms")), "written in 'ms', the row is in GB/s"));
}

TEST_CASE("teaching check: a missing row fails, naming the citation") {
  const auto problem = only_problem(replaced(good_page(), "size_bytes=1G", "size_bytes=1M"));
  CHECK(hdb_test::contains(problem, "size_bytes=1M"));
  CHECK(hdb_test::contains(problem, "no such row in mini/results.csv"));
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "host_kind=pinned", "hostkind=pinned")),
                           "has no column 'hostkind'"));
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "cite mini", "cite nowhere")), "reference 'nowhere'"));
}

TEST_CASE("teaching check: a citation that fits several rows fails, naming what tells them apart") {
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), " api=async", "")), "2 rows match; tell them apart by api"));
}

TEST_CASE("teaching check: a missing plot fails") {
  const auto problems =
      hdb::teaching::check_page(replaced(good_page(), "copy_bandwidth_h2d.png", "copy_bandwidth_d2h.png"), fixture_sources);
  REQUIRE(problems.size() == 2);
  CHECK(hdb_test::contains(problems[0], "line 6: linked file reference/mini/plots/copy_bandwidth_d2h.png does not exist"));
  CHECK(hdb_test::contains(problems[1], "lesson '1. Pinned copies' (line 4) links no plot"));
}

TEST_CASE("teaching check: a lesson without a citation fails unless it is marked pending") {
  const std::string bare = good_page() + "\n## 2. Stragglers\nNot measured yet.\n";
  const auto problems = hdb::teaching::check_page(bare, fixture_sources);
  REQUIRE(problems.size() == 4);
  CHECK(hdb_test::contains(problems[0], "lesson '2. Stragglers' (line 12) cites no number"));
  CHECK(hdb_test::contains(problems[1], "links no plot"));
  CHECK(hdb_test::contains(problems[2], "has no `hdbench run` command"));
  CHECK(hdb_test::contains(problems[3], "lesson '2. Stragglers' (line 12) has no exercise"));
  // A pending lesson still has its exercise, with no answer yet.
  const std::string straggler = exercise("./run_all.sh --families allreduce -- --benchmark_filter=allreduce/straggler/", "no data yet");
  CHECK(hdb::teaching::check_page(bare + "<!-- pending: a straggler run on a multi-GPU set -->\n" + straggler, fixture_sources).empty());
  CHECK(hdb_test::contains(only_problem(bare + "<!-- pending: a straggler run on a multi-GPU set -->\n"), "has no exercise"));
}

TEST_CASE("teaching check: an exercise asks a prediction, gives a command and cites the answer its command measures") {
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), mini_exercise, "")), "lesson '1. Pinned copies' (line 4) has no exercise"));
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "Predict it", "Guess it")),
                           "its exercise (line 10) asks for no prediction ('Predict')"));
  const auto no_command = hdb::teaching::check_page(
      replaced(good_page(), "`./run_all.sh --families copy -- --benchmark_filter='copy/bandwidth/h2d/pinned/async/size:1073741824/'`",
               "the copy family"),
      fixture_sources);
  REQUIRE(no_command.size() == 2);  // and so nothing runs the answer
  CHECK(hdb_test::contains(no_command[0], "its exercise (line 10) gives no run command"));
  CHECK(hdb_test::contains(no_command[1], "no run command of the exercise of lesson '1. Pinned copies'"));
  const std::string mini_command = "./run_all.sh --families copy -- --benchmark_filter='copy/bandwidth/h2d/pinned/async/size:1073741824/'";
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), mini_exercise, exercise(mini_command, "55.3 GB/s"))),
                           "cites no answer to compare with"));
  // The answer is what the exercise's own command measures, not what the lesson's does.
  const auto elsewhere = only_problem(replaced(good_page(), "--benchmark_filter='copy/bandwidth/h2d/pinned/async/size:1073741824/'`:",
                                               "--benchmark_filter='copy/bandwidth/h2d/pageable/'`:"));
  CHECK(hdb_test::contains(elsewhere, "line 10: cite mini copy/bandwidth"));
  CHECK(hdb_test::contains(elsewhere, "no run command of the exercise of lesson '1. Pinned copies' runs copy/bandwidth/h2d/pinned/async"));
  // A family's binary runs its own family only.
  CHECK(hdb_test::contains(only_problem(replaced(good_set_page(), "bin/hdbench-sync", "bin/hdbench-copy")),
                           "no run command of the exercise of lesson '1. Launch and copy' runs sync/launch/empty_kernel"));
}

TEST_CASE("teaching check: a command that would not run the cited case fails") {
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "h2d/pinned/async", "h2d/pageable/async")),
                           "runs copy/bandwidth/h2d/pinned/async/size:1073741824/streams:1/gpu:0"));
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "--families copy", "--families sync")),
                           "no run command of lesson '1. Pinned copies'"));
  // Anchored at the end of the case name, the filter misses the suffix Google Benchmark adds.
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "size:1073741824/'", "size:1073741824/streams:1/gpu:0$'")),
                           "no run command of lesson"));
}

TEST_CASE("teaching check: a comment that is not a citation, and a citation after no number, fail") {
  const auto problem = only_problem(replaced(good_page(), "<!-- cite", "<!-- cit"));  // the exercise still cites
  CHECK(hdb_test::contains(problem, "line 5: comment 'cit mini copy/bandwidth"));
  CHECK(hdb_test::contains(problem, "is neither 'cite ...', 'cite-set ...' nor 'pending: WHY'"));
  const auto unbacked = only_problem(replaced(good_page(), "55.3 GB/s<!--", "fast<!--"));
  CHECK(hdb_test::contains(unbacked, "line 5: 'cite mini copy/bandwidth"));
  CHECK(hdb_test::contains(unbacked, "follows no number"));
}

TEST_CASE("teaching check: the page must name the run it cites") {
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "Run 20261201T160834Z-vm.", "")),
                           "never names run 20261201T160834Z-vm of reference 'mini'"));
}

TEST_CASE("teaching check: a set citation holds with the members' median, range and count") {
  CHECK(hdb::teaching::check_page(good_set_page(), fixture_sources).empty());
  // A hyphen for the dash, the unit repeated in the range, and no count where every member holds the row.
  CHECK(hdb::teaching::check_page(replaced(good_set_page(), "(3.4–5.3 over 4", "(3.4-5.3 µs over 4"), fixture_sources).empty());
  CHECK(hdb::teaching::check_page(replaced(good_set_page(), "(3.4–5.3 over 4 machines)", "(3.4–5.3)"), fixture_sources).empty());
  // The median of an even count is the mean of the middle two, (4.18 + 4.62) / 2.
  CHECK(hdb::teaching::check_page(replaced(good_set_page(), "4.4 µs (3.4–5.3", "4.40 µs (3.41–5.34"), fixture_sources).empty());
}

TEST_CASE("teaching check: a set citation with a wrong median fails, naming the members' median") {
  const auto problem = only_problem(replaced(good_set_page(), "4.4 µs (3.4", "4.5 µs (3.4"));
  CHECK(hdb_test::contains(problem, "line 4: cite-set miniset sync/launch"));
  CHECK(hdb_test::contains(problem, "the page says a median of 4.5 µs, the members' median is 4.4"));
  CHECK(hdb_test::contains(problem, "(4.4 at the precision written; 4 of the 4 members of set 'miniset' hold the row)"));
}

TEST_CASE("teaching check: a set citation with a wrong range fails, naming the members' span") {
  const auto problem = only_problem(replaced(good_set_page(), "(3.4–5.3 over", "(3.4–5.4 over"));
  CHECK(hdb_test::contains(problem, "line 4: cite-set miniset sync/launch"));
  CHECK(hdb_test::contains(problem, "the page says a range of 3.4–5.4 µs, the members span 3.41–5.34"));
  CHECK(hdb_test::contains(problem, "(3.4–5.3 at the precision written)"));
  CHECK(hdb_test::contains(only_problem(replaced(good_set_page(), "(3.4–5.3 over", "(3.3–5.3 over")), "(3.4–5.3 at the precision"));
}

TEST_CASE("teaching check: a set citation with a wrong machine count fails") {
  CHECK(hdb_test::contains(only_problem(replaced(good_set_page(), "over 4 machines", "over 5 machines")),
                           "the page says over 5 machines, 4 of the 4 members of set 'miniset' hold the row"));
  // Over the members that hold the row, not over the whole set.
  CHECK(hdb_test::contains(only_problem(replaced(good_set_page(), "over 3 machines", "over 4 machines")),
                           "the page says over 4 machines, 3 of the 4 members of set 'miniset' hold the row"));
  // A range without a count claims every member.
  const auto problem = only_problem(replaced(good_set_page(), "(55.1–55.5 over 3 machines)", "(55.1–55.5)"));
  CHECK(hdb_test::contains(problem, "a range without 'over N machines' is over every member, but only 3 of the 4 members"));
  CHECK(hdb_test::contains(problem, "write 'over 3 machines'"));
}

TEST_CASE("teaching check: a set is cited as a set, a single run as one run") {
  // One member quoted as if typical.
  const std::string single = "An empty launch costs 3.4 µs<!-- cite miniset sync/launch";
  CHECK(hdb_test::contains(only_problem(replaced(good_set_page(), "An empty launch costs 4.4 µs (3.4–5.3 over 4 machines)<!-- cite-set miniset sync/launch", single)),
                           "reference 'miniset' is a set of 4 machines; one run is not typical of it"));
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "55.3 GB/s<!-- cite mini", "55.3 GB/s (55.3–55.3 over 1 machines)<!-- cite-set mini")),
                           "reference 'mini' is no set"));
  // A set citation needs its range.
  CHECK(hdb_test::contains(only_problem(replaced(good_set_page(), "4.4 µs (3.4–5.3 over 4 machines)<!--", "4.4 µs<!--")),
                           "follows no 'median unit (low–high over N machines)'"));
  CHECK(hdb_test::contains(only_problem(replaced(good_set_page(), "(3.4–5.3 over", "(3.4–5.3 ms over")),
                           "writes the median in 'µs' and the range in 'ms'"));
}

TEST_CASE("teaching check: a cause with no cited row and no 'not measured' fails") {
  const std::string claim = "Pinned h2d at 55.3 GB/s<!-- cite mini copy/bandwidth direction=h2d host_kind=pinned api=async "
                            "size_bytes=1G metric=bandwidth -->.\n";
  const auto with = [&](const std::string& sentences) { return replaced(good_page(), claim, claim + sentences + "\n"); };
  const auto problem = only_problem(with("Pinned copies are fast because the engine does DMA."));
  CHECK(hdb_test::contains(problem, "line 6: lesson '1. Pinned copies' gives a cause ('because')"));
  CHECK(hdb_test::contains(problem, "\"Pinned copies are fast because the engine does DMA.\""));
  CHECK(hdb_test::contains(only_problem(with("The engine copies, so the host waits.")), "gives a cause (', so')"));
  for (const char* marker : {"sets the pace", "is the CPU", "shares the link", "comes from DMA", "is why it waits"}) {
    CHECK(hdb::teaching::check_page(with(std::string("The copy ") + marker + " here."), fixture_sources).size() == 1);
  }
  // The citation must stand in the causal sentence itself, not in the one before it.
  CHECK(hdb_test::contains(only_problem(replaced(good_page(), "metric=bandwidth -->.", "metric=bandwidth -->. That is because of DMA.")),
                           "gives a cause ('because')"));
}

TEST_CASE("teaching check: a cause holds with a cited row in its sentence or a 'not measured'") {
  const std::string cited = "Pinned h2d at 55.3 GB/s<!-- cite mini copy/bandwidth";
  CHECK(hdb::teaching::check_page(replaced(good_page(), cited, "Pinned h2d is fast because it reaches 55.3 GB/s<!-- cite mini copy/bandwidth"),
                                  fixture_sources).empty());
  // "e.g." ends no sentence, so the citation before it still backs the cause after it.
  CHECK(hdb::teaching::check_page(replaced(good_page(), "metric=bandwidth -->.", "metric=bandwidth --> e.g. from cudaMallocHost because DMA needs it."),
                                  fixture_sources).empty());
  const std::string claim = "Plot: [h2d]";
  for (const char* sentence : {"The driver stages pageable copies because DMA needs locked pages (not measured here). ",
                               "Why is it fast? ", "**Claim:** \"Pinned is fast because it is pinned.\" "}) {
    CHECK(hdb::teaching::check_page(replaced(good_page(), claim, sentence + claim), fixture_sources).empty());
  }
}

TEST_CASE("teaching check: a linked figure's title holds to its lesson's rows") {
  // mini is one run: the claim is the row's value, the title's number at its precision.
  const auto mini = [](const std::string& title, const std::string& text, const std::string& value) {
    const planted_figures planted(
        "mini", one_figure("copy_bandwidth_h2d.png", title,
                           R"([{"text": ")" + text + R"(", "value": )" + value +
                               R"(, "formula": "a", "cites": [{"family": "copy", "case": "bandwidth", "metric": "bandwidth", )"
                               R"("statistic": "median", "device": 0, "direction": "h2d", "host_kind": "pinned", "api": "async", )"
                               R"("size_bytes": 1073741824, "streams": 1}]}])"));
    return hdb::teaching::check_page(good_page(), planted.where());
  };
  CHECK(mini("This run: 55.3 GB/s", "55.3", "55.305005455323126").empty());
  const auto wrong = mini("This run: 55.4 GB/s", "55.4", "55.4");
  REQUIRE(wrong.size() == 1);
  CHECK(hdb_test::contains(wrong[0], "line 6: figure copy_bandwidth_h2d.png: the title of planted says 55.4 (a of rows lesson '1. Pinned copies' cites)"));
  CHECK(hdb_test::contains(wrong[0], "the lesson's row gives 55.305"));
}

TEST_CASE("teaching check: a set's figure says 'This run' and lies in the set's range, or quotes its median") {
  CHECK(set_page_problems("This run: an empty launch costs 4.18 µs", "[" + launch_claim("4.18", "4.18") + "]").empty());
  CHECK(set_page_problems("This run: an empty launch costs 3.41 µs", "[" + launch_claim("3.41", "3.41") + "]").empty());
  const auto outside = set_page_problems("This run: an empty launch costs 5.4 µs", "[" + launch_claim("5.4", "5.4") + "]");
  REQUIRE(outside.size() == 1);
  CHECK(hdb_test::contains(outside[0], "says 5.4 (a of rows lesson '1. Launch and copy' cites) for this run, 5.4, outside the set's range 3.41–5.34"));
  CHECK(set_page_problems("This run: an empty launch costs 3.40 µs", "[" + launch_claim("3.40", "3.40") + "]").size() == 1);
  // Without "this run" the title quotes the set: its median, 4.40.
  const auto one_machine = set_page_problems("An empty launch costs 4.18 µs", "[" + launch_claim("4.18", "4.18") + "]");
  REQUIRE(one_machine.size() == 1);
  CHECK(hdb_test::contains(one_machine[0], "the lesson's set median gives 4.4: a figure of one run says \"This run\""));
  CHECK(set_page_problems("An empty launch costs 4.40 µs", "[" + launch_claim("4.40", "4.4") + "]").empty());
}

TEST_CASE("teaching check: a set figure's ratio lies in the range its rows' members allow") {
  // h2d ÷ launch: members span 55.1–55.5 GB/s and 3.41–5.34 µs, so the ratio 10.32–16.28.
  const auto ratio = [](const std::string& text) {
    return "[{\"text\": \"" + text + "\", \"value\": " + text +
           R"(, "formula": "a/b", "cites": [{"family": "copy", "case": "bandwidth", "metric": "bandwidth", "statistic": "median", )"
           R"("device": 0, "direction": "h2d", "host_kind": "pinned", "api": "async", "size_bytes": 1073741824, "streams": 1}, )"
           R"({"family": "sync", "case": "launch", "metric": "launch_time", "statistic": "median", "device": 0, "api": "empty_kernel"}]}])";
  };
  CHECK(set_page_problems("This run: 10.4× per µs", ratio("10.4")).empty());
  CHECK(set_page_problems("This run: 16.2× per µs", ratio("16.2")).empty());
  CHECK(hdb_test::contains(set_page_problems("This run: 16.4× per µs", ratio("16.4")).at(0), "outside the set's range 10.31"));
  CHECK(set_page_problems("This run: 10.2× per µs", ratio("10.2")).size() == 1);
}

TEST_CASE("teaching check: a linked figure's measured numbers are claims, and the figure is indexed") {
  const auto unclaimed = set_page_problems("This run: 4.18 µs, 2.5× a copy and 40 % busy, 4 streams of 1 GiB",
                                           "[" + launch_claim("4.18", "4.18") + "]");
  REQUIRE(unclaimed.size() == 2);
  CHECK(hdb_test::contains(unclaimed[0], "the title of planted says 2.5 with no claim in figures.json naming its rows"));
  CHECK(hdb_test::contains(unclaimed[1], "says 40 with no claim"));
  // A claim that quotes no row of its lesson is not held to it.
  CHECK(set_page_problems("This run: 63.0 GB/s", R"([{"text": "63.0", "value": 63.0, "cites": [{"const": 63.0}]}])").empty());
  const planted_figures other("miniset", one_figure("another.png", "no numbers", "[]"));
  const auto missing = hdb::teaching::check_page(good_set_page(), other.where());
  REQUIRE(missing.size() == 1);
  CHECK(hdb_test::contains(missing[0], "line 6: figure sync_launch.png:"));
  CHECK(hdb_test::contains(missing[0], "lists no figure drawn to sync_launch.png"));
}
