#include "hdb/harness/verdict/decision.hpp"

#include "hdb/harness/common/tables.hpp"

namespace hdb {

double worse_by(double value, double centre, better direction) {
  switch (direction) {
    case better::higher: return 1 - value / centre;
    case better::lower: return value / centre - 1;
    case better::neutral: return 0;
  }
  return 0;
}

verdict position_in_band(double value, double low, double high, better direction) {
  const bool below = value < low, above = value > high;
  switch (direction) {
    case better::higher: return below ? verdict::slower : above ? verdict::faster : verdict::same;
    case better::lower: return above ? verdict::slower : below ? verdict::faster : verdict::same;
    case better::neutral: return verdict::same;
  }
  return verdict::same;
}

grade grade_of(verdict position, double worse, const figure_rule& rule) {
  switch (position) {
    case verdict::same: return grade::pass;
    case verdict::faster: return rule.host_bound ? grade::pass : grade::warn;
    case verdict::slower: return !rule.tolerance || worse > *rule.tolerance ? grade::fail : grade::warn;
  }
  return grade::fail;
}

figure_decision decide_figure(double value, const figure_band& band, better direction, const figure_rule& rule) {
  figure_decision d;
  d.position = position_in_band(value, band.low, band.high, direction);
  d.worse = worse_by(value, band.centre, direction);
  d.result = grade_of(d.position, d.worse, rule);
  return d;
}

verdict compare_verdict(const figure_decision& decision) {
  if (decision.result == grade::fail) return verdict::slower;
  return decision.position == verdict::slower ? verdict::same : decision.position;
}

std::string decision_reason(const figure_decision& decision, double value, const figure_band& band, const figure_rule& rule,
                            band_source source, std::string_view unit) {
  const bool set = source == band_source::set;
  const std::string host = rule.host_bound ? "host line: " : "";
  const std::string change = percent_text(value / band.centre - 1, percent_style::signed_change);
  const std::string centre = format_figure(band.centre);
  const std::string peers = std::to_string(band.runs) + " peers";
  const std::string by = percent_text(decision.worse, percent_style::change);
  const std::string worse_word = unit == "GB/s" || unit == "us" ? "slower" : "worse";
  // A ratio against a pass of the same run (a pipeline's speedup and efficiency over one stream)
  // reads better when that pass ran slow, as under a co-tenant (113 % efficiency): not a faster node.
  const bool ratio = unit == "ratio" || unit == "%";
  const std::string faster_why = rule.host_bound ? ": a faster host than the set's"
                                 : ratio ? ": a ratio, so perhaps its baseline pass ran slow (another tenant?): re-run it; if it "
                                           "holds, a faster node than the set's runs, or a set to renew"
                                         : ": a faster node than the set's runs, or a set to renew";
  switch (decision.position) {
    case verdict::same:
      return host + (set ? "within the band (" + change + " from the set's centre " + centre + ")"
                         : "within its peers' band (" + change + " from their centre " + centre + ", " + peers + ")");
    case verdict::faster:
      return host + (set ? change + " from the set's centre " + centre + ", better than the set's band" + faster_why
                         : "better than its peers by " + percent_text(-decision.worse, percent_style::change) + " (centre " + centre + ", " + peers +
                               "), outside their band" + (rule.host_bound ? ": a faster host" : ""));
    case verdict::slower: break;
  }
  if (!rule.tolerance) {
    return change + " from " + (set ? "the set's centre " + centre : "its peers' centre " + centre + " (" + peers + ")") +
           ", worse than " + (set ? "a healthy node of this kind reads" : "its peers read") +
           "; no tolerance is declared for it, so the band alone decides";
  }
  const std::string tolerance = percent_text(*rule.tolerance);
  const std::string host_why =
      rule.host_bound ? ": the host's CPU, memory and neighbours set this figure, not the GPU or its link" : "";
  if (decision.result == grade::fail) {
    return host + worse_word + " than " + (set ? "the set's centre " : "its peers' centre ") + centre + " by " + by + ": outside " +
           (set ? "the band of healthy nodes of this kind" : "its peers' band (" + peers + ")") + " and beyond the " + tolerance +
           " that matters for a node" + host_why;
  }
  return host + worse_word + " than " + (set ? "the set's machines" : "its peers") + " by " + by + " (centre " + centre +
         (set ? "" : ", " + peers) + "), outside their band but within the " + tolerance + " that matters for a node" + host_why;
}

grade grade_by_peak(double percent_of_peak) {
  return percent_of_peak >= peak_pass_percent ? grade::pass : percent_of_peak >= peak_warn_percent ? grade::warn : grade::fail;
}

}  // namespace hdb
