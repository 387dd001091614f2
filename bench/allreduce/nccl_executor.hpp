#pragma once
// One rank: a GPU, its NCCL communicators (one per rank count) and the current case's buffers.
// Executes the driver's commands; see nccl_executor.cpp for what is timed.
#include "transport.hpp"

#include <memory>
#include <string>

namespace hdb::allreduce {

// Rank `rank`, driving CUDA device `device`.
[[nodiscard]] std::unique_ptr<rank_executor> make_nccl_executor(int rank, int device);

// A fresh ncclUniqueId (its bootstrap root lives in the calling process until every rank joined).
[[nodiscard]] unique_id make_nccl_unique_id();

// "2.28.9", from the library actually loaded.
[[nodiscard]] std::string nccl_version();

}  // namespace hdb::allreduce
