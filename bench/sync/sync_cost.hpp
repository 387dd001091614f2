#pragma once
// sync_cost: what one sync call on already-finished work costs the host, in two states of that
// work, and the same protocol in a bare process as the cross-check of the family's figure.
//
// The state matters more than the process: on an H200 a cudaStreamSynchronize on a stream whose
// last kernel finished costs 1.42-1.47 us while only stream syncs have looked at it, and 0.32-0.34
// us once one cudaDeviceSynchronize has run (a bare process, two machines alike); event sync and
// event query behave the same way. The driver answers from what a device-wide sync retired without
// asking the GPU again. docs/sync.md has the figures.
#include <optional>
#include <string>
#include <string_view>

#include "sync_math.hpp"

namespace hdb::sync {

enum class sync_call { device_sync, stream_sync, event_sync, event_query };

[[nodiscard]] std::string_view to_string(sync_call call);
[[nodiscard]] std::optional<sync_call> parse_sync_call(std::string_view text);
inline constexpr sync_call all_sync_calls[] = {sync_call::device_sync, sync_call::stream_sync, sync_call::event_sync,
                                               sync_call::event_query};

// Which completion the calls see. `completed`: one empty kernel and an event on a fresh stream,
// finished through cudaStreamSynchronize only; `retired`: the same, then one cudaDeviceSynchronize.
enum class work_state { completed, retired };

// Host clock around each of `calls` calls on the current device (after 100 warm-up calls), on a
// fresh non-blocking stream and event.
[[nodiscard]] spread time_sync_calls(sync_call call, work_state state, int calls);

// The bare cross-check: a child process of this binary that creates its context, times the same
// calls in the `completed` state and prints one JSON line; nothing else of the family runs in it.
inline constexpr std::string_view bare_child_flag = "bare-sync-child";
// The child's whole life (before_cuda, before any other CUDA call): time `call`, print, exit code.
[[nodiscard]] int bare_child_main(sync_call call, int device, int calls);
// In the parent: runs `executable --bare-sync-child=CALL --devices=DEVICE --sync-calls=CALLS` and
// returns the child's median call time (us). Throws naming the child when it fails.
[[nodiscard]] double bare_call_time(const std::string& executable, sync_call call, int device, int calls);

}  // namespace hdb::sync
