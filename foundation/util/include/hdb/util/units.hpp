#pragma once
// Unit conversions shared by the bench binaries and the harness.
#include <cstdint>
#include <string>

namespace hdb {

// Decimal GB/s (1e9 bytes per second, as link rates are quoted) of `bytes` moved in
// `microseconds`: bytes / us / 1e3.
[[nodiscard]] double gb_per_s(double bytes, double microseconds);

// Binary size for reports and messages: the largest of GiB, MiB, KiB that divides `bytes`
// exactly, else bytes ("4 KiB", "64 MiB", "1 GiB", "1536 KiB", "3 B"), so a printed size is
// never rounded.
[[nodiscard]] std::string format_size(std::uint64_t bytes);

// Seconds for messages, to a tenth and without trailing zeros: "30 s", "2.5 s", "0.1 s".
[[nodiscard]] std::string format_seconds(double seconds);

}  // namespace hdb
