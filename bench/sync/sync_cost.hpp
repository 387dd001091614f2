#pragma once
// sync_cost: what one sync call on already-finished work costs the host, in two states of that
// work, and the same protocol in a bare process as the cross-check of the family's figure.
//
// The state matters more than the process: on an H200 a cudaStreamSynchronize on a stream whose
// last kernel finished costs 1.42-1.47 us while only stream syncs have looked at it, and 0.32-0.34
// us once one cudaDeviceSynchronize has run (a bare process, two machines alike); event sync and
// event query behave the same way. The driver answers from what a device-wide sync retired without
// asking the GPU again. The figures: git show 47ce745:docs/sync.md.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "sync_math.hpp"

namespace hdb::sync {

enum class sync_call { device_sync, stream_sync, event_sync, event_query };

[[nodiscard]] std::string_view to_string(sync_call call);
inline constexpr sync_call all_sync_calls[] = {sync_call::device_sync, sync_call::stream_sync, sync_call::event_sync,
                                               sync_call::event_query};

// Which completion the calls see. `completed`: one empty kernel and an event on a fresh stream,
// finished through cudaStreamSynchronize only; `retired`: the same, then one cudaDeviceSynchronize.
enum class work_state { completed, retired };

// Host clock around each of `calls` calls on the current device (after 100 warm-up calls), on a
// fresh non-blocking stream and event.
[[nodiscard]] spread time_sync_calls(sync_call call, work_state state, int calls);

// The bare cross-check: child processes of this binary that create their context, time every call
// in the `completed` state (one fresh stream and event each, as the family's cases) and print one
// JSON line; nothing else of the family runs in them. A process lands on its own level (a bare
// cudaDeviceSynchronize read 0.37-0.69 us in five processes of one H200), so several are run
// and the family's figure is held against their range.
inline constexpr std::string_view bare_child_flag = "bare-sync-child";
inline constexpr int bare_processes = 3;
// The child's whole life (before_cuda, before any other CUDA call): time every call, print, exit code.
[[nodiscard]] int bare_child_main(int device, int calls);

// Per call: the median over `bare_processes` children of each child's median call time (us), and
// the lowest and highest child.
struct bare_figure {
  double median = 0, low = 0, high = 0;
};
using bare_figures = std::map<sync_call, bare_figure>;
// In the parent: runs `executable --bare-sync-child=all --devices=DEVICE --sync-calls=CALLS`
// bare_processes times. Throws naming the child when one fails.
[[nodiscard]] bare_figures bare_call_times(const std::string& executable, int device, int calls);

}  // namespace hdb::sync
