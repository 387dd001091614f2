#pragma once
// The one exception type the harness throws on purpose: bad usage or unusable input. The CLI
// prints its message on one line and exits 2; anything else escaping is a bug.
#include <stdexcept>

namespace hdb {

class harness_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hdb
