#pragma once
// The sync family's arithmetic, free of CUDA so host tests check it without a GPU: spreads, the
// host-clock <-> %globaltimer calibration, wake-up latency and CPU time per wait, the sync
// trap's read-back schedule and expected values, and the record a scheduling-mode child sends
// back to its parent.
#include "step_value.hpp"

#include "hdb/util/stats.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hdb::sync {

// ---- scheduling modes --------------------------------------------------------------------

// How a host thread waits inside a CUDA sync call (cudaSetDeviceFlags). Fixed when the context is
// created, so each mode is measured in a child process of its own.
enum class sched_mode { automatic, spin, yield, blocking_sync };

[[nodiscard]] std::string_view to_string(sched_mode mode) noexcept;
[[nodiscard]] std::optional<sched_mode> parse_sched_mode(std::string_view text);
// The cudaDeviceSchedule* value of a mode (the runtime's constants; wakeup.cpp static_asserts them).
[[nodiscard]] unsigned schedule_flag(sched_mode mode) noexcept;
inline constexpr unsigned schedule_mask = 0x07;  // cudaDeviceScheduleMask
// Whether cudaGetDeviceFlags' value shows `mode` in force. Auto may be reported resolved to the
// mode the driver chose, so only the explicit modes are checked.
[[nodiscard]] bool mode_in_force(sched_mode mode, unsigned device_flags) noexcept;
// "spin,blocking_sync" -> modes; throws usage_error naming --flag.
[[nodiscard]] std::vector<sched_mode> parse_sched_modes(const std::string& flag, const std::string& text);

// What the host waits with once the kernel is queued.
enum class wait_api { device_sync, stream_sync, event_sync, event_blocking_sync, event_query_poll };
[[nodiscard]] std::string_view to_string(wait_api api) noexcept;  // the CUDA call, as the CSV's api
[[nodiscard]] std::optional<wait_api> parse_wait_api(std::string_view text);
[[nodiscard]] std::vector<wait_api> all_wait_apis();

// ---- statistics --------------------------------------------------------------------------

// Mean of the middle half (the values between the quartiles' order statistics, n/4 dropped at
// each end). For samples quantised at a coarse tick (%globaltimer's 32 ns) a median jumps a whole
// tick between repetitions; this mean moves smoothly and still ignores outliers. Throws on none.
[[nodiscard]] double interquartile_mean(std::vector<double> values);
// The interquartile mean of each group: values[i] belongs to group_of[i] < groups. Throws when the
// spans differ in length, a group index is out of range, or a group has no values.
[[nodiscard]] std::vector<double> interquartile_means_by_group(std::span<const double> values,
                                                               std::span<const std::size_t> group_of, std::size_t groups);

struct spread {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
};
[[nodiscard]] spread summarize(const std::vector<double>& values);

// ---- host clock vs %globaltimer ----------------------------------------------------------

// One ping-pong: the host's clock when it asked, the device's %globaltimer when it answered, the
// host's clock when it saw the answer (all ns).
struct round_trip {
  std::int64_t host_send_ns = 0;
  std::int64_t device_ns = 0;
  std::int64_t host_receive_ns = 0;
};

// device = host + offset_ns, to within +- uncertainty_ns, around host time host_ns.
struct clock_offset {
  std::int64_t host_ns = 0;
  std::int64_t offset_ns = 0;
  std::int64_t uncertainty_ns = 0;
};

// The round trip with the smallest RTT bounds the offset best: the device read its clock at some
// instant between send and receive, so offset = device - midpoint, uncertainty = RTT / 2.
// Throws on an empty list or a round trip whose receive precedes its send.
[[nodiscard]] clock_offset calibrate(std::span<const round_trip> trips);

// Device timestamps to host time between two calibrations, the offset interpolated linearly in
// host time (the two clocks drift apart by parts per million).
class clock_map {
 public:
  clock_map(const clock_offset& before, const clock_offset& after);
  [[nodiscard]] std::int64_t to_host_ns(std::int64_t device_ns) const noexcept;
  [[nodiscard]] double uncertainty_us() const noexcept;  // the larger of the two calibrations'
  [[nodiscard]] double drift_ppm() const noexcept;

 private:
  [[nodiscard]] double offset_at(double host_ns) const noexcept;
  clock_offset before_;
  clock_offset after_;
};

// ---- wake-up latency ---------------------------------------------------------------------

// One wait: host clock at the call and at its return, the kernel's last act (device clock), and
// the CPU time the calling thread and the whole process burnt during the call.
struct wait_sample {
  std::int64_t call_ns = 0;
  std::int64_t return_ns = 0;
  std::int64_t kernel_end_device_ns = 0;
  double thread_cpu_us = 0;
  double process_cpu_us = 0;
};

struct wait_summary {
  spread wakeup_us;             // host return - kernel end (host clock)
  double wait_us = 0;           // median call -> return
  double thread_cpu_us = 0;     // median CPU time of the waiting thread per wait
  double process_cpu_us = 0;    // median CPU time of the whole process per wait
  double cpu_busy_percent = 0;  // median thread CPU time / wait time
};

[[nodiscard]] double wakeup_us(const wait_sample& sample, const clock_map& clock) noexcept;
[[nodiscard]] wait_summary summarize_waits(std::span<const wait_sample> samples, const clock_map& clock);

// ---- the scheduling-mode child's report --------------------------------------------------

struct child_block {
  wait_api api = wait_api::stream_sync;
  wait_summary summary;
};

struct child_report {
  sched_mode mode = sched_mode::automatic;
  unsigned device_flags = 0;        // cudaGetDeviceFlags in the child
  double clock_uncertainty_us = 0;  // worst calibration of the child
  double clock_drift_ppm = 0;
  std::vector<child_block> blocks;  // one per (repetition, api)
};

[[nodiscard]] nlohmann::json to_json(const child_report& report);
// Throws std::runtime_error naming what is missing or malformed.
[[nodiscard]] child_report parse_child_report(std::string_view text);

struct child_request {
  sched_mode mode = sched_mode::automatic;
  int device = 0;
  int calls = 1;           // waits per API per block
  int blocks = 1;          // blocks (repetitions) per API
  int kernel_us = 1000;    // duration of the kernel waited for
};
// The arguments after the program name that make a hdbench-sync process the child for `request`.
[[nodiscard]] std::vector<std::string> child_arguments(const child_request& request);
inline constexpr std::string_view child_flag = "sched-child";

// --benchmark_repetitions=N among Google Benchmark's arguments, or `fallback`.
[[nodiscard]] int requested_repetitions(const std::vector<std::string>& benchmark_args, int fallback);

// ---- the sync trap -----------------------------------------------------------------------

// A read-back interval; `never` means no read-back inside the loop.
inline constexpr int never = 0;
// "1,2,8,64,never" -> {1,2,8,64,0}; throws usage_error naming --flag.
[[nodiscard]] std::vector<int> parse_every_list(const std::string& flag, const std::string& text);
// Whether the loop reads the value back after step `step` (0-based): after every k-th step.
[[nodiscard]] bool reads_back_after(std::size_t step, int every) noexcept;
[[nodiscard]] std::size_t readback_count(std::size_t steps, int every) noexcept;

// The accumulator after `steps` steps (wrapping uint32 sum of step_value(0..steps-1)).
[[nodiscard]] std::uint32_t accumulated(std::size_t steps) noexcept;
// The accumulator after each step: element i = accumulated(i + 1).
[[nodiscard]] std::vector<std::uint32_t> accumulator_history(std::size_t steps);

// Throughput relative to the loop that never reads back: never's time / this loop's time.
[[nodiscard]] double relative_throughput(double never_us, double loop_us);

// The next spin for a step kernel: correct the spin by what the measured step missed the
// target by; never negative.
[[nodiscard]] std::int64_t next_spin_ns(std::int64_t target_ns, std::int64_t spin_ns, std::int64_t measured_ns) noexcept;

}  // namespace hdb::sync
