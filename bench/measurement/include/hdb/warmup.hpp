#pragma once
// Warm start. A fresh process on an idle GPU meets a low SM clock, an unloaded launch path and
// copy engines whose first use allocates driver staging buffers; its first measured case is then
// slower than the rest and a run-to-run comparison sees a change that is not there. Before the
// first case every selected GPU runs a busy kernel in short slices, measuring its own SM clock
// inside the kernel (clock64 ticks per %globaltimer nanosecond), until that clock reaches 95 % of
// the GPU's maximum or a time cap; the copy engines (h2d, d2h, d2d, pinned and pageable) and the
// launch path (a few empty launches) are exercised once. docs/methodology.md, "Warm start".
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hdb {

enum class warmup_stop {
  max_clock,      // the measured SM clock reached warmup_target_fraction of the maximum
  clock_plateau,  // the maximum is unknown and the measured clock stopped rising
  time_cap,       // neither happened within the cap (power or thermal limits, locked clocks)
};

[[nodiscard]] std::string_view to_string(warmup_stop stop) noexcept;

inline constexpr double warmup_target_fraction = 0.95;
// Below this rise between consecutive slices the clock counts as no longer rising.
inline constexpr double warmup_plateau_rise = 0.01;
inline constexpr std::chrono::milliseconds warmup_slice{10};
inline constexpr std::chrono::milliseconds warmup_default_cap{300};

struct warmup_report {
  int device = 0;
  double first_sm_mhz = 0;  // measured in the first slice
  double sm_mhz = 0;        // measured in the last slice: the clock the first case starts at
  double max_sm_mhz = 0;    // cudaDevAttrClockRate; 0 when the device does not report one
  int slices = 0;
  double elapsed_ms = 0;    // the whole warm-up of this device, copies and launches included
  warmup_stop stop = warmup_stop::time_cap;
};

// The stopping rule, applied after every slice: `slice_mhz` holds the clock measured in each
// slice so far, `elapsed` the time spent. nullopt: run another slice. The cap is checked after a
// slice, so a warm-up can overrun it by at most one slice.
[[nodiscard]] std::optional<warmup_stop> warmup_decision(const std::vector<double>& slice_mhz, double max_sm_mhz,
                                                         std::chrono::duration<double, std::milli> elapsed,
                                                         std::chrono::milliseconds cap);

// Warms every device of `devices` at once (a slice runs on all of them, then all are waited
// for), so the first device does not cool down while the last one warms. One report per device,
// in the order given. Leaves the current device as it was. Throws cuda_error.
[[nodiscard]] std::vector<warmup_report> warm_start(const std::vector<int>& devices,
                                                    std::chrono::milliseconds cap = warmup_default_cap);
[[nodiscard]] warmup_report warm_start(int device, std::chrono::milliseconds cap = warmup_default_cap);

// Context pairs for the run's JSON: warmup.gpu<index>.{sm_mhz,first_sm_mhz,max_sm_mhz,ms,slices,stop}.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> warmup_context(const warmup_report& report);

}  // namespace hdb
