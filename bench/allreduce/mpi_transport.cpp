#include "mpi_transport.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <unistd.h>

#include "hdb/util/units.hpp"  // format_seconds

namespace hdb::allreduce {
namespace {

// Completes `request`, polling until `timeout`; false when it did not complete in time.
bool wait_until(MPI_Request& request, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

mpi_world::mpi_world(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_free(&node);
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  host_ = name;
}

mpi_world::~mpi_world() {
  if (broken_) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  } else {
    MPI_Finalize();
  }
}

std::vector<rank_reply> mpi_group::exchange(const command& cmd, std::chrono::milliseconds timeout) {
  if (world_.broken()) throw rank_lost("an MPI rank was lost earlier in this job; no more cases can run");
  command sent = cmd;
  MPI_Request request;
  MPI_Ibcast(&sent, sizeof(sent), MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  if (!wait_until(request, timeout)) {
    world_.mark_broken();
    throw rank_lost("broadcasting '" + std::string(to_string(cmd.kind)) + "' to the MPI ranks did not complete (watchdog)");
  }
  const rank_reply own = own_.execute(cmd);
  std::vector<rank_reply> replies(static_cast<std::size_t>(world_.size()));
  MPI_Igather(&own, sizeof(own), MPI_BYTE, replies.data(), sizeof(rank_reply), MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  if (!wait_until(request, timeout)) {
    world_.mark_broken();
    throw rank_lost("an MPI rank did not answer '" + std::string(to_string(cmd.kind)) + "' within " +
                    format_seconds(std::chrono::duration<double>(timeout).count()) + " (watchdog); the job will be aborted at exit");
  }
  return replies;
}

// Nonblocking on this side too: MPI never matches a nonblocking collective with a blocking one.
std::optional<command> mpi_channel::receive() {
  command cmd;
  MPI_Request request;
  MPI_Ibcast(&cmd, sizeof(cmd), MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  return cmd;
}

void mpi_channel::send(const rank_reply& reply) {
  MPI_Request request;
  MPI_Igather(&reply, sizeof(reply), MPI_BYTE, nullptr, 0, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
}

}  // namespace hdb::allreduce
