#include "comm/mpi/mpi_communicator.h"

#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "comm/recv_into.h"
#include "core/error.h"

namespace ferry::comm {
namespace {

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  FERRY_THROW(IoError, "MPI ", what, " failed: ", std::string(text, len));
}

int checked_count(std::size_t bytes) {
  FERRY_REQUIRE(bytes <= static_cast<std::size_t>(INT_MAX), "MPI message of ", bytes,
                " bytes exceeds the 2 GiB limit of one message");
  return static_cast<int>(bytes);
}

// Move-only owner of a duplicated MPI_Comm.
class CommHandle {
 public:
  CommHandle() { check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "Comm_dup"); }
  ~CommHandle() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// A pending MPI request plus the buffer it owns (for sends).
struct RequestState : Ticket::State {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<std::byte> owned;
  std::span<std::byte> out;  // receives: checked against the received count
  bool is_recv = false;
  void wait() override {
    MPI_Status status;
    check_mpi(MPI_Wait(&request, &status), is_recv ? "Wait(recv)" : "Wait(send)");
    if (is_recv) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (static_cast<std::size_t>(count) != out.size())
        FERRY_THROW(FormatError, "message from rank ", status.MPI_SOURCE, " has ", count, " bytes, expected ",
                    out.size());
    }
  }
  bool test() override {
    int flag = 0;
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
};

}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "Init_thread");
    owns_ = true;
    // Errors come back as codes and become exceptions, instead of aborting the job silently.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  } else {
    MPI_Query_thread(&provided);
  }
  switch (provided) {
    case MPI_THREAD_SINGLE: thread_level_ = "MPI_THREAD_SINGLE"; break;
    case MPI_THREAD_FUNNELED: thread_level_ = "MPI_THREAD_FUNNELED"; break;
    case MPI_THREAD_SERIALIZED: thread_level_ = "MPI_THREAD_SERIALIZED"; break;
    default: thread_level_ = "MPI_THREAD_MULTIPLE"; break;
  }
  thread_multiple_ = provided == MPI_THREAD_MULTIPLE;
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

bool launched_by_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var)) return true;
  return false;
}

void mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

struct MpiCommunicator::Impl {
  CommHandle comm;
  std::atomic<std::uint64_t> bytes_sent{0}, bytes_recv{0}, messages_sent{0}, messages_recv{0};
  void count_send(std::size_t n) {
    bytes_sent += n;
    messages_sent += 1;
  }
  void count_recv(std::size_t n) {
    bytes_recv += n;
    messages_recv += 1;
  }
};

MpiCommunicator::MpiCommunicator() : impl_(std::make_unique<Impl>()) {
  MPI_Comm_set_errhandler(impl_->comm.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl_->comm.get(), &rank_);
  MPI_Comm_size(impl_->comm.get(), &size_);
}

MpiCommunicator::~MpiCommunicator() = default;

void MpiCommunicator::send(int dst, int tag, std::span<const std::byte> data) {
  check_mpi(MPI_Send(data.data(), checked_count(data.size()), MPI_BYTE, dst, tag, impl_->comm.get()), "Send");
  impl_->count_send(data.size());
}

Message MpiCommunicator::recv(int src, int tag) {
  MPI_Message handle;
  MPI_Status status;
  // Matched probe + receive: safe when several threads receive at once.
  check_mpi(MPI_Mprobe(src == kAnySource ? MPI_ANY_SOURCE : src, tag, impl_->comm.get(), &handle, &status),
            "Mprobe");
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Message m{status.MPI_SOURCE, status.MPI_TAG, std::vector<std::byte>(static_cast<std::size_t>(count))};
  check_mpi(MPI_Mrecv(m.data.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE), "Mrecv");
  impl_->count_recv(m.data.size());
  return m;
}

Ticket MpiCommunicator::isend(int dst, int tag, std::vector<std::byte> data) {
  auto s = std::make_unique<RequestState>();
  s->owned = std::move(data);
  check_mpi(MPI_Isend(s->owned.data(), checked_count(s->owned.size()), MPI_BYTE, dst, tag, impl_->comm.get(),
                      &s->request),
            "Isend");
  impl_->count_send(s->owned.size());
  return Ticket(std::move(s));
}

Ticket MpiCommunicator::irecv(int src, int tag, std::span<std::byte> out) {
  auto s = std::make_unique<RequestState>();
  s->is_recv = true;
  s->out = out;
  check_mpi(MPI_Irecv(out.data(), checked_count(out.size()), MPI_BYTE, src == kAnySource ? MPI_ANY_SOURCE : src,
                      tag, impl_->comm.get(), &s->request),
            "Irecv");
  impl_->count_recv(out.size());
  return Ticket(std::move(s));
}

void MpiCommunicator::allreduce_sum(std::span<float> data) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(), checked_count(data.size()), MPI_FLOAT, MPI_SUM,
                          impl_->comm.get()),
            "Allreduce");
  // Bandwidth-optimal algorithms send 2(N-1)/N of the buffer per rank.
  std::size_t wire = size_ > 1 ? data.size_bytes() * 2 * (size_ - 1) / size_ : 0;
  impl_->count_send(wire);
  impl_->count_recv(wire);
}

void MpiCommunicator::allreduce_sum(std::span<double> data) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(), checked_count(data.size()), MPI_DOUBLE, MPI_SUM,
                          impl_->comm.get()),
            "Allreduce");
}

void MpiCommunicator::broadcast(std::span<std::byte> data, int root) {
  check_mpi(MPI_Bcast(data.data(), checked_count(data.size()), MPI_BYTE, root, impl_->comm.get()), "Bcast");
  if (rank_ == root) impl_->count_send(data.size());
  else impl_->count_recv(data.size());
}

std::vector<std::vector<std::byte>> MpiCommunicator::allgather(std::span<const std::byte> mine) {
  int my_count = checked_count(mine.size());
  std::vector<int> counts(size_), displs(size_);
  check_mpi(MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, impl_->comm.get()), "Allgather");
  std::size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[r] = checked_count(total);
    total += counts[r];
  }
  std::vector<std::byte> flat(total);
  check_mpi(MPI_Allgatherv(mine.data(), my_count, MPI_BYTE, flat.data(), counts.data(), displs.data(), MPI_BYTE,
                           impl_->comm.get()),
            "Allgatherv");
  std::vector<std::vector<std::byte>> all(size_);
  for (int r = 0; r < size_; ++r) all[r].assign(flat.begin() + displs[r], flat.begin() + displs[r] + counts[r]);
  impl_->count_send(mine.size() * (size_ - 1));
  impl_->count_recv(total - mine.size());
  return all;
}

void MpiCommunicator::barrier() { check_mpi(MPI_Barrier(impl_->comm.get()), "Barrier"); }

CommCounters MpiCommunicator::counters() const {
  return CommCounters{impl_->bytes_sent.load(), impl_->bytes_recv.load(), impl_->messages_sent.load(),
                      impl_->messages_recv.load()};
}

}  // namespace ferry::comm
