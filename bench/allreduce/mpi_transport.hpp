#pragma once
// Ranks as MPI processes (built with -DHDB_WITH_MPI=ON; started by mpirun or srun). MPI is only the
// bootstrap and the results' gather: commands go out with MPI_Ibcast, replies come back with
// MPI_Igather, both polled against the watchdog so a dead or stuck rank fails the case instead of
// hanging rank 0. NCCL moves the data. Rank 0 is the driver and a rank: it executes each command
// itself between the broadcast and the gather.
#include "transport.hpp"

#include <string>

namespace hdb::allreduce {

// Whether this process was started by an MPI launcher (Open MPI, MPICH/Hydra, PMIx, Slurm).
[[nodiscard]] bool launched_by_mpi();

// MPI_Init on construction, MPI_Finalize (or MPI_Abort after a lost rank) on destruction.
class mpi_world {
 public:
  mpi_world(int* argc, char*** argv);
  ~mpi_world();
  mpi_world(const mpi_world&) = delete;
  mpi_world& operator=(const mpi_world&) = delete;

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  // Index among the ranks of this node (MPI_COMM_TYPE_SHARED): which selected GPU this rank drives.
  [[nodiscard]] int local_rank() const noexcept { return local_rank_; }
  [[nodiscard]] const std::string& host() const noexcept { return host_; }
  // After a lost rank the job cannot finish cleanly: the destructor aborts it instead.
  void mark_broken() noexcept { broken_ = true; }
  [[nodiscard]] bool broken() const noexcept { return broken_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::string host_;
  bool broken_ = false;
};

// Rank 0's view: every command is executed by `own` too (rank 0 is a rank).
class mpi_group final : public rank_group {
 public:
  mpi_group(mpi_world& world, rank_executor& own) : world_(world), own_(own) {}
  [[nodiscard]] int size() const override { return world_.size(); }
  std::vector<rank_reply> exchange(const command& cmd, std::chrono::milliseconds timeout) override;

 private:
  mpi_world& world_;
  rank_executor& own_;
};

// Ranks 1..n-1.
class mpi_channel final : public worker_channel {
 public:
  std::optional<command> receive() override;
  void send(const rank_reply& reply) override;
};

}  // namespace hdb::allreduce
