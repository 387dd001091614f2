#pragma once
// hdbench-allreduce: NCCL collectives, one process per GPU. See allreduce.cpp.
#include "hdb/family.hpp"

namespace hdb::allreduce {

[[nodiscard]] family_spec family();

}  // namespace hdb::allreduce
