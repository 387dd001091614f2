#include "protocol.hpp"

#include <algorithm>
#include <cstring>

namespace hdb::allreduce {

std::string_view to_string(command_kind kind) {
  switch (kind) {
    case command_kind::connect: return "connect";
    case command_kind::prepare: return "prepare";
    case command_kind::verify: return "verify";
    case command_kind::run: return "run";
    case command_kind::overlap: return "overlap";
    case command_kind::straggler: return "straggler";
    case command_kind::release: return "release";
    case command_kind::reset: return "reset";
    case command_kind::quit: return "quit";
  }
  return "?";
}

std::string_view to_string(reply_status status) {
  switch (status) {
    case reply_status::ok: return "ok";
    case reply_status::idle: return "idle";
    case reply_status::skip: return "skip";
    case reply_status::fail: return "fail";
  }
  return "?";
}

std::uint64_t fingerprint(const unique_id& id) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char byte : id) hash = (hash ^ byte) * 0x100000001b3ull;
  return hash;
}

void set_reason(rank_reply& reply, std::string_view text) {
  const std::size_t n = std::min(text.size(), reply.reason.size() - 1);
  std::memcpy(reply.reason.data(), text.data(), n);
  reply.reason[n] = '\0';
}

std::string reason_of(const rank_reply& reply) {
  return std::string(reply.reason.data(), strnlen(reply.reason.data(), reply.reason.size()));
}

std::string describe_rank(const rank_reply& reply) {
  return "rank " + std::to_string(reply.rank) + " (GPU " + std::to_string(reply.device) + ")";
}

}  // namespace hdb::allreduce
