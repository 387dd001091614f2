#pragma once
// The stand-in family of the tests: a family on the shared main with the CPU backend. See
// standin.cpp for what is timed.
#include "hdb/family.hpp"

#include <cstddef>
#include <string_view>

namespace hdb::standin {

// One triad pass a[i] = b[i] + s * c[i] over n elements, `lanes` (4, 8 or 16) independent
// elements per iteration; stride 1 walks the arrays in order, stride k in k interleaved sweeps.
void triad_pass(double* a, const double* b, const double* c, double s, std::size_t n, std::size_t stride, int lanes);

// The index of the first element of `a` that is not b + s * c (n when every one is).
[[nodiscard]] std::size_t first_wrong(const double* a, const double* b, const double* c, double s, std::size_t n);

[[nodiscard]] family_spec family();

}  // namespace hdb::standin
