// MPI backend: the only code in ferry that includes mpi.h. Requests MPI_THREAD_MULTIPLE, because
// a rank's compute thread, communication thread and server loop all use MPI at once.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.h"

namespace ferry::comm {

// Initialises MPI on construction (once per process) and finalises on destruction.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  // The thread level MPI granted ("MPI_THREAD_MULTIPLE", ...).
  const std::string& thread_level() const { return thread_level_; }
  bool thread_multiple() const { return thread_multiple_; }

 private:
  std::string thread_level_;
  bool thread_multiple_ = false;
  bool owns_ = false;
};

// How a rank waits for MPI. OpenMPI's blocking calls poll its queues at full speed: on a cluster
// each rank has its own cores and that is the fastest way to wait. When more ranks share a
// machine than it has cores (a cluster emulated on one machine), a rank that polls takes the CPU
// from the ranks that compute. kSleep polls with MPI_Test back to back for the first polls and
// then sleeps 5 us, doubling up to 100 us, between polls; kAuto sleeps when the ranks on this
// node (MPI_COMM_TYPE_SHARED) outnumber its cores, and spins otherwise.
enum class MpiWait { kAuto, kSpin, kSleep };
// "auto", "spin" or "sleep" (InvalidArgument naming `what` otherwise).
MpiWait parse_mpi_wait(const std::string& text, const std::string& what);
// The front ends' reading of FERRY_MPI_WAIT (unset: kAuto; a bad value: InvalidArgument).
MpiWait mpi_wait_from_environment();

// True when this process was started by mpirun/mpiexec (looks at the launcher's environment).
bool launched_by_mpirun();

// Ends every rank of the job with `code` (a failed rank must not leave the others hanging).
[[noreturn]] void mpi_abort(int code);

class MpiCommunicator final : public Communicator {
 public:
  // A communicator over MPI_COMM_WORLD (duplicated). MPI must be initialised (MpiRuntime).
  explicit MpiCommunicator(MpiWait wait = MpiWait::kAuto);
  // A communicator over the ranks of MPI_COMM_WORLD that pass the same `color` (MPI_Comm_split, in
  // world order): every rank of the world must construct one at the same time.
  explicit MpiCommunicator(int color, MpiWait wait = MpiWait::kAuto);
  ~MpiCommunicator() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int dst, int tag, std::span<const std::byte> data) override;
  Message recv(int src, int tag) override;
  Ticket isend(int dst, int tag, std::vector<std::byte> data) override;
  Ticket irecv(int src, int tag, std::span<std::byte> out) override;
  void allreduce_sum(std::span<float> data) override;
  void allreduce_sum(std::span<double> data) override;
  void broadcast(std::span<std::byte> data, int root) override;
  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override;
  void barrier() override;
  CommCounters counters() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace ferry::comm
