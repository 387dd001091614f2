#pragma once
// HDB_HOST_DEVICE marks a function that the host compiler and nvcc both compile: the data
// patterns a kernel writes and the host (or a host-only test) checks are written once.
#if defined(__CUDACC__)
#define HDB_HOST_DEVICE __host__ __device__
#else
#define HDB_HOST_DEVICE
#endif
