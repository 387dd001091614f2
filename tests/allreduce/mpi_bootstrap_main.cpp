// The MPI bootstrap end to end without a GPU, run by CTest under
//   mpirun -np 2 --allow-run-as-root --oversubscribe allreduce_mpi_bootstrap
// Rank 0 drives (and is a rank), rank 1 serves: the unique id reaches both, a case is set up and
// reduced to the slowest rank, the launch method reaches both, and quit ends the job cleanly. Exit 0
// on success; any failure prints the reason and exits 1.
#include "driver.hpp"
#include "mpi_transport.hpp"
#include "standin_executor.hpp"

#include "hdb/family.hpp"

#include <cstdio>
#include <memory>
#include <stdexcept>

using namespace hdb::allreduce;

namespace {

void expect(bool condition, const char* what) {
  if (!condition) throw std::runtime_error(what);
}

int drive(mpi_world& world) {
  hdb_test::standin_executor own(0, hdb_test::standin_mode::normal);
  unique_id id{};
  id.fill(42);
  {
    mpi_group group(world, own);
    expect(group.size() == 2, "two ranks expected");
    command connect;
    connect.kind = command_kind::connect;
    connect.ranks = 2;
    connect.id = id;
    const auto replies = group.exchange(connect, std::chrono::seconds(20));
    expect(replies[0].token == fingerprint(id) && replies[1].token == fingerprint(id), "unique id not shared");
    expect(replies[1].rank == 1, "replies out of rank order");
  }
  {
    // The driver releases its case when it goes: before quit, as the benchmark's session does.
    collective_driver driver([&](const group_profile&) { return std::make_unique<mpi_group>(world, own); },
                             [&] { return id; }, std::chrono::seconds(20));
    case_request request;
    request.key = "case";
    request.shape.ranks = 2;
    request.shape.count = 16;
    request.shape.iterations = 2;
    expect(driver.run(request).time_us == 11.0, "time is not the slowest rank's");
    request.key = "stream";
    request.shape.launch = launch_method::stream;
    expect(driver.run(request).time_us == 21.0, "the launch method did not reach both ranks");
    request.shape.launch = launch_method::graph;
    request.key = "alone";
    request.shape.ranks = 1;
    expect(driver.run(request).time_us == 10.0, "rank 0 alone");
  }
  command quit;
  quit.kind = command_kind::quit;
  static_cast<void>(mpi_group(world, own).exchange(quit, std::chrono::seconds(20)));
  std::printf("mpi bootstrap: ok (2 ranks)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mpi_world world(&argc, &argv);
  try {
    if (world.rank() != 0) {
      hdb_test::standin_executor executor(world.rank(), hdb_test::standin_mode::normal);
      mpi_channel channel;
      return serve(channel, executor);
    }
    return drive(world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi bootstrap: rank %d: %s\n", world.rank(), e.what());
    world.mark_broken();
    return 1;
  }
}
