#pragma once
// Launchers for the sync family's kernels. Plain C++, so the benchmark sources (host compiler)
// can call them. Every kernel is a single thread or a single block: they measure waiting and
// ordering, not throughput, and leave the rest of the GPU idle.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hdb::sync::device {

// Does nothing: launch cost in its purest form.
void empty(cudaStream_t stream);

// Spins for spin_ns on %globaltimer, then writes %globaltimer to *end_ns as its last act.
// end_ns: mapped host memory (the host reads it once the kernel is done).
void delay_then_stamp(std::uint64_t spin_ns, std::uint64_t* end_ns, cudaStream_t stream);

// One step of the sync-trap loop: spins for spin_ns, then *accumulator += step_value(step) and,
// when history != nullptr, history[step] = the new accumulator.
void trap_step(std::uint64_t spin_ns, std::uint32_t* accumulator, std::uint32_t* history, std::uint64_t step,
               cudaStream_t stream);

// Clock calibration partner: for r = 1..rounds waits until *request >= r, then writes
// %globaltimer to replies[r - 1]. Gives up after timeout_ns. request, replies: mapped host memory.
void clock_echo(const std::uint32_t* request, std::uint64_t* replies, std::uint32_t rounds, std::uint64_t timeout_ns,
                cudaStream_t stream);

// Producer: spins for spin_ns, then writes pattern_word(w, seed) to data[0, words) and, as its
// last act, %globaltimer to *end_ns.
void produce(std::uint64_t* data, std::size_t words, std::uint32_t seed, std::uint64_t spin_ns, std::uint64_t* end_ns,
             cudaStream_t stream);
// Consumer: writes %globaltimer to *start_ns as its first act, then counts the words of data
// that differ from pattern_word(w, seed) into *mismatches.
void consume(const std::uint64_t* data, std::size_t words, std::uint32_t seed, unsigned long long* mismatches,
             std::uint64_t* start_ns, cudaStream_t stream);

}  // namespace hdb::sync::device
