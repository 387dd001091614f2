#pragma once
// hdbench-overlap: single- vs multi-stream copy/compute pipelines, the stream-semantics pitfalls,
// a CUDA-graph pipeline, the movement tax and per-operation timelines. See overlap.cpp.
#include "hdb/family.hpp"

namespace hdb::overlap {

[[nodiscard]] family_spec family();

}  // namespace hdb::overlap
