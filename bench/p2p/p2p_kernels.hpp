#pragma once
// Launchers for the p2p family's kernels, plain C++ so host-compiled sources can call them.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hdb::p2p::kernels {

// Copies `bytes` from src to dst with SM loads and stores; either pointer may be a peer GPU's
// memory (peer access enabled). 16-byte vectors, four loads in flight per thread before any
// store, so a remote read keeps enough requests outstanding to fill NVLink; any alignment and
// any size (the unaligned remainder goes byte by byte). `blocks` x 512 threads.
void peer_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream);

// Keeps `stream` busy for about `ns` nanoseconds: the probe that finds out whether a copy call
// blocks the calling thread (it returns at once when the copy is queued behind this kernel).
void busy_wait(std::uint64_t ns, cudaStream_t stream);

}  // namespace hdb::p2p::kernels
