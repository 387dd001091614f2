#include "driver.hpp"

#include "hdb/family.hpp"

#include <algorithm>

namespace hdb::allreduce {

std::string join_reasons(const std::vector<rank_reply>& replies, reply_status status) {
  std::string text;
  for (const rank_reply& r : replies) {
    if (r.status == status) text += (text.empty() ? "" : "; ") + describe_rank(r) + ": " + reason_of(r);
  }
  return text;
}

collective_driver::collective_driver(group_factory make_group, id_factory make_id, std::chrono::milliseconds watchdog)
    : make_group_(std::move(make_group)), make_id_(std::move(make_id)), watchdog_(watchdog) {}

collective_driver::~collective_driver() {
  if (group_ && !current_key_.empty()) {
    try {
      command release;
      release.kind = command_kind::release;
      static_cast<void>(group_->exchange(release, watchdog_));
    } catch (const std::exception&) {
      // The group is being torn down anyway; its destructor ends the processes.
    }
  }
}

void collective_driver::drop_group() noexcept {
  group_.reset();
  connected_.clear();
  current_key_.clear();
}

std::vector<rank_reply> collective_driver::step(command cmd) {
  // A rank waits for a collective a little less than the watchdog, so a stuck collective comes
  // back as that rank's own failure (with NCCL's reason) before the driver kills anybody.
  cmd.wait_limit_ms = watchdog_.count() * 3 / 4;
  try {
    return group_->exchange(cmd, watchdog_);
  } catch (const rank_lost& e) {
    drop_group();
    throw std::runtime_error(e.what());
  }
}

void collective_driver::fail_and_reset(const std::string& reason) {
  command reset;
  reset.kind = command_kind::reset;
  connected_.clear();
  current_key_.clear();
  // A rank that cannot even reset (its CUDA context is gone) cannot serve another case: the next
  // case starts a fresh group.
  if (!join_reasons(step(reset), reply_status::fail).empty()) drop_group();
  throw std::runtime_error(reason);
}

void collective_driver::ensure_group(const group_profile& profile) {
  if (group_ && profile_ == profile) return;
  drop_group();
  group_ = make_group_(profile);
  profile_ = profile;
}

void collective_driver::set_up(const case_request& request) {
  const int ranks = request.shape.ranks;
  if (!current_key_.empty()) {
    command release;
    release.kind = command_kind::release;
    current_key_.clear();
    static_cast<void>(step(release));
  }
  if (!connected_.contains(ranks)) {
    command connect = request.shape;
    connect.kind = command_kind::connect;
    connect.id = make_id_();
    const auto replies = step(connect);
    const std::string failed = join_reasons(replies, reply_status::fail);
    if (!failed.empty()) fail_and_reset("creating the communicator of " + std::to_string(ranks) + " ranks failed: " + failed);
    const std::uint64_t expected = fingerprint(connect.id);
    for (const rank_reply& r : replies) {
      if (r.status == reply_status::ok && r.token != expected) {
        fail_and_reset(describe_rank(r) + " joined with a different unique id than the driver sent");
      }
    }
    connected_.insert(ranks);
  }

  command prepare = request.shape;
  prepare.kind = command_kind::prepare;
  const auto prepared = step(prepare);
  // Nobody has entered a collective yet: one rank's skip or failure stops all of them here.
  if (const std::string failed = join_reasons(prepared, reply_status::fail); !failed.empty()) fail_and_reset(failed);
  if (const std::string skipped = join_reasons(prepared, reply_status::skip); !skipped.empty()) {
    command release;
    release.kind = command_kind::release;
    static_cast<void>(step(release));
    throw skip_case(skipped);
  }

  command verify = request.shape;
  verify.kind = command_kind::verify;
  const auto verified = step(verify);
  if (const std::string failed = join_reasons(verified, reply_status::fail); !failed.empty()) fail_and_reset(failed);
  std::uint64_t wrong = 0;
  std::string where;
  for (const rank_reply& r : verified) {
    wrong += r.wrong;
    if (r.wrong > 0) {
      where += (where.empty() ? "" : "; ") + describe_rank(r) + ": " + std::to_string(r.wrong) +
               " wrong, first at element " + std::to_string(r.first_wrong);
    }
  }
  if (wrong > 0) {
    command release;
    release.kind = command_kind::release;
    static_cast<void>(step(release));
    throw std::runtime_error("verification failed: " + std::to_string(wrong) + " wrong values (" + where + ")");
  }
  current_wrong_ = wrong;
  current_key_ = request.key;
}

repetition_result collective_driver::run(const case_request& request) {
  ensure_group(request.profile);
  if (request.shape.ranks > group_->size()) {
    throw skip_case("needs " + std::to_string(request.shape.ranks) + " ranks, " + std::to_string(group_->size()) +
                    " available");
  }
  if (current_key_ != request.key) set_up(request);

  command run = request.shape;
  run.kind = request.timed;
  const auto replies = step(run);
  if (const std::string failed = join_reasons(replies, reply_status::fail); !failed.empty()) fail_and_reset(failed);

  repetition_result result;
  result.wrong = current_wrong_;
  for (const rank_reply& r : replies) {
    if (r.status != reply_status::ok) continue;
    const auto rank = static_cast<std::size_t>(r.rank);
    if (result.rank_times_us.size() <= rank) result.rank_times_us.resize(rank + 1);
    result.rank_times_us[rank] = r.times_us;
    result.time_us = std::max(result.time_us, r.times_us[0]);
    for (std::size_t i = 0; i < r.times_us.size(); ++i) result.overlap_us[i] = std::max(result.overlap_us[i], r.times_us[i]);
  }
  return result;
}

}  // namespace hdb::allreduce
