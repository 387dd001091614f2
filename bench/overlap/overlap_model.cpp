#include "overlap_model.hpp"

#include "transform_math.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/pattern.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace hdb::overlap {

std::vector<chunk> split_into_chunks(std::size_t bytes, int count, std::size_t alignment) {
  if (bytes == 0) throw std::invalid_argument("cannot split 0 bytes into chunks");
  if (alignment == 0 || bytes % alignment != 0) {
    throw std::invalid_argument(std::to_string(bytes) + " bytes is not a whole number of " + std::to_string(alignment) +
                                "-byte units");
  }
  if (count < 1) throw std::invalid_argument("the chunk count must be >= 1, not " + std::to_string(count));
  const std::size_t units = bytes / alignment;
  const std::size_t per_chunk = (units + static_cast<std::size_t>(count) - 1) / static_cast<std::size_t>(count);
  if (per_chunk * static_cast<std::size_t>(count - 1) >= units) {
    throw std::invalid_argument(std::to_string(bytes) + " bytes cannot be split into " + std::to_string(count) +
                                " non-empty chunks of whole " + std::to_string(alignment) + "-byte units");
  }
  std::vector<chunk> chunks;
  chunks.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const std::size_t offset = static_cast<std::size_t>(i) * per_chunk * alignment;
    chunks.push_back({offset, std::min(per_chunk * alignment, bytes - offset)});
  }
  return chunks;
}

int stream_of_chunk(int chunk_index, int streams) { return chunk_index % streams; }

std::vector<chunk_rule> parse_chunk_rules(std::string_view text) {
  std::vector<chunk_rule> rules;
  for (const std::string& entry : split_list(text)) {
    const std::string_view item = entry;
    chunk_rule rule;
    std::string_view digits = item;
    if (!item.empty() && (item.back() == 'S' || item.back() == 's')) {
      rule.per_stream = true;
      digits = item.substr(0, item.size() - 1);
    }
    if (digits.empty() && rule.per_stream) {
      rule.count = 1;
    } else {
      if (!all_digits(digits) || digits.size() > 6) {
        throw std::invalid_argument("'" + std::string(item) + "' is neither a chunk count (32) nor a multiple of the "
                                    "stream count (S, 4S)");
      }
      rule.count = std::stoi(std::string(digits));
      if (rule.count < 1) throw std::invalid_argument("'" + std::string(item) + "' asks for no chunks");
    }
    rules.push_back(rule);
  }
  return rules;
}

std::vector<int> chunk_counts(const std::vector<chunk_rule>& rules, int streams) {
  std::vector<int> counts;
  for (const chunk_rule& r : rules) counts.push_back(r.per_stream ? r.count * streams : r.count);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

std::string_view to_string(regime r) noexcept {
  switch (r) {
    case regime::balanced: return "balanced";
    case regime::compute_heavy: return "compute_heavy";
    case regime::copy_heavy: return "copy_heavy";
  }
  return "?";
}

double kernel_to_copy_ratio(regime r) noexcept {
  switch (r) {
    case regime::balanced: return 1.0;
    case regime::compute_heavy: return 4.0;
    case regime::copy_heavy: return 0.25;
  }
  return 1.0;
}

std::uint32_t iterations_for(double fixed_us, double per_iteration_us, double target_us) {
  if (!(per_iteration_us > 0)) {
    throw std::runtime_error("kernel time did not grow with its iterations (" + std::to_string(per_iteration_us) +
                             " us per iteration): the work per byte cannot be calibrated");
  }
  const double k = std::round((target_us - fixed_us) / per_iteration_us);
  return static_cast<std::uint32_t>(std::clamp(k, 1.0, 1e9));
}

namespace {
double us_for(std::size_t bytes, double gbps) { return static_cast<double>(bytes) / (gbps * 1e3); }
}  // namespace

double serial_time_us(const stage_rates& rates, std::size_t bytes) {
  return us_for(bytes, rates.h2d_gbps) + us_for(bytes, rates.kernel_gbps) + us_for(bytes, rates.d2h_gbps);
}

double ideal_time_us(const stage_rates& rates, const std::vector<chunk>& chunks, int streams) {
  std::vector<double> per_stream(static_cast<std::size_t>(std::max(streams, 1)), 0.0);
  double pipeline = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const std::size_t b = chunks[i].bytes;
    const double h = us_for(b, rates.h2d_gbps);
    const double k = us_for(b, rates.kernel_gbps);
    const double d = us_for(b, rates.d2h_gbps);
    per_stream[static_cast<std::size_t>(stream_of_chunk(static_cast<int>(i), streams))] += h + k + d;
    if (i == 0) {
      pipeline += h + k + d;  // fill: the first chunk passes every stage before the pipeline is full
    } else {
      const double link = std::max({h, d, us_for(2 * b, rates.bidir_gbps)});
      pipeline += std::max(k, link);
    }
  }
  const double busiest = *std::max_element(per_stream.begin(), per_stream.end());
  return streams <= 1 ? busiest : std::max(pipeline, busiest);
}

probe_plan plan_probe(const std::vector<chunk>& chunks, std::size_t bytes) {
  if (chunks.empty()) throw std::invalid_argument("a bound probe needs the pass's chunks");
  probe_plan plan;
  plan.op_bytes = std::min(chunks.front().bytes, probe_batch_bytes);
  if (plan.op_bytes == 0 || plan.op_bytes > bytes) {
    throw std::invalid_argument("a bound probe of " + std::to_string(plan.op_bytes) + "-byte operations does not fit " +
                                std::to_string(bytes) + " bytes");
  }
  plan.ops = static_cast<int>(std::clamp<std::size_t>(probe_batch_bytes / plan.op_bytes, 1, max_probe_ops));
  const std::size_t regions = bytes / plan.op_bytes;
  const auto offset = [&](std::size_t region) { return (region % regions) * plan.op_bytes; };
  for (std::size_t j = 0; j < static_cast<std::size_t>(plan.ops); ++j) {
    plan.h2d_offsets.push_back(offset(j));
    plan.d2h_offsets.push_back(offset(static_cast<std::size_t>(plan.ops) + j));
  }
  return plan;
}

stage_rates rates_from_probe(const probe_plan& plan, const probe_times& times, double bidir_when_unmeasured) {
  const double batch = static_cast<double>(plan.op_bytes) * plan.ops;
  const auto rate = [](const char* what, double bytes, double us) {
    if (!(us > 0)) {
      throw std::runtime_error(std::string("the bound probe's ") + what + " batch measured " + std::to_string(us) +
                               " us: no rate can come from it");
    }
    return bytes / (us * 1e3);
  };
  stage_rates r;
  r.h2d_gbps = rate("H2D", batch, times.h2d_us);
  r.d2h_gbps = rate("D2H", batch, times.d2h_us);
  r.bidir_gbps = times.bidir_us ? rate("two-way", 2 * batch, *times.bidir_us) : bidir_when_unmeasured;
  r.kernel_gbps = rate("kernel", batch, times.kernel_us);
  return r;
}

double speedup(double serial_us, double measured_us) { return serial_us / measured_us; }

std::optional<double> overlap_efficiency(double serial_us, double measured_us, double ideal_us) {
  const double room = serial_us - ideal_us;
  if (!(room > 0.01 * serial_us)) return std::nullopt;
  return (serial_us - measured_us) / room;
}

pass_figures figures_of_pass(double serial_us, double measured_us, double ideal_us, int streams) {
  pass_figures f;
  f.speedup = speedup(serial_us, measured_us);
  f.ideal_speedup = speedup(serial_us, ideal_us);
  if (streams > 1) f.efficiency = overlap_efficiency(serial_us, measured_us, ideal_us);
  return f;
}

std::uint32_t input_word(std::size_t word_index, std::uint32_t seed) noexcept {
  return static_cast<std::uint32_t>(pattern_word(word_index >> 1, seed) >> (32 * (word_index & 1)));
}

std::vector<std::size_t> words_to_check(const std::vector<chunk>& chunks, std::size_t bytes) {
  const std::size_t words = bytes / 4;
  std::vector<std::size_t> out;
  if (bytes <= full_check_bytes) {
    out.resize(words);
    for (std::size_t i = 0; i < words; ++i) out[i] = i;
    return out;
  }
  constexpr std::size_t edge_words = 4096 / 4;
  constexpr std::size_t stride_words = (64 * 1024) / 4;
  for (const chunk& c : chunks) {
    const std::size_t first = c.offset / 4;
    const std::size_t last = (c.offset + c.bytes) / 4;  // one past
    for (std::size_t w = first; w < std::min(first + edge_words, last); ++w) out.push_back(w);
    for (std::size_t w = std::max(first, last - std::min(last, edge_words)); w < last; ++w) out.push_back(w);
  }
  for (std::size_t w = 0; w < words; w += stride_words) out.push_back(w);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<word_mismatch> first_mismatch(const std::uint32_t* output, const std::vector<std::size_t>& words,
                                            std::uint32_t seed, std::uint32_t iterations, std::uint32_t salt) {
  const affine_map f = transform_power(iterations, salt);
  for (std::size_t w : words) {
    const std::uint32_t expected = f(input_word(w, seed));
    if (output[w] != expected) return word_mismatch{w, expected, output[w]};
  }
  return std::nullopt;
}

}  // namespace hdb::overlap
