#include "comm/mpi/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

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

// Calls `poll` until it returns true, pausing between calls when `sleep` (MpiWait::kSleep).
template <typename Poll>
void wait_until(bool sleep, Poll poll) {
  if (poll()) return;
  auto pause = std::chrono::microseconds(5);
  for (int polls = 1; !poll(); ++polls) {
    if (!sleep || polls < 64) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(100));
  }
}

void wait_request(bool sleep, MPI_Request& request, MPI_Status* status, const char* what) {
  wait_until(sleep, [&] {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, status), what);
    return done != 0;
  });
}

// A pending MPI request plus the buffer it owns (for sends).
struct RequestState : Ticket::State {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<std::byte> owned;
  std::span<std::byte> out;  // receives: checked against the received count
  bool is_recv = false;
  bool sleep = false;
  void wait() override {
    MPI_Status status;
    wait_request(sleep, request, &status, is_recv ? "Wait(recv)" : "Wait(send)");
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
  // Move-only owner of a duplicated MPI_Comm.
  class CommHandle {
   public:
    CommHandle() { check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "Comm_dup"); }
    // The ranks of MPI_COMM_WORLD with this color, in world order (collective over the world).
    explicit CommHandle(int color) {
      int world_rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      check_mpi(MPI_Comm_split(MPI_COMM_WORLD, color, world_rank, &comm_), "Comm_split");
    }
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

  explicit Impl(MpiWait wait) : sleep(resolve(wait)) {}
  Impl(int color, MpiWait wait) : comm(color), sleep(resolve(wait)) {}
  CommHandle comm;
  bool sleep;  // MpiWait resolved

  // kAuto: sleep when the ranks of this node outnumber its cores (collective over the world).
  static bool resolve(MpiWait wait) {
    if (wait != MpiWait::kAuto) return wait == MpiWait::kSleep;
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "Comm_split_type");
    int local = 1;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    return static_cast<unsigned>(local) > std::max(1u, std::thread::hardware_concurrency());
  }
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

MpiWait parse_mpi_wait(const std::string& text, const std::string& what) {
  if (text == "auto") return MpiWait::kAuto;
  if (text == "spin") return MpiWait::kSpin;
  if (text == "sleep") return MpiWait::kSleep;
  FERRY_THROW(InvalidArgument, what, " must be auto, spin or sleep, got '", text, "'");
}

MpiWait mpi_wait_from_environment() {
  const char* mode = std::getenv("FERRY_MPI_WAIT");
  return mode == nullptr ? MpiWait::kAuto : parse_mpi_wait(mode, "FERRY_MPI_WAIT");
}

MpiCommunicator::MpiCommunicator(MpiWait wait) : impl_(std::make_unique<Impl>(wait)) {
  MPI_Comm_set_errhandler(impl_->comm.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl_->comm.get(), &rank_);
  MPI_Comm_size(impl_->comm.get(), &size_);
}

MpiCommunicator::MpiCommunicator(int color, MpiWait wait) : impl_(std::make_unique<Impl>(color, wait)) {
  MPI_Comm_set_errhandler(impl_->comm.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl_->comm.get(), &rank_);
  MPI_Comm_size(impl_->comm.get(), &size_);
}

MpiCommunicator::~MpiCommunicator() = default;

void MpiCommunicator::send(int dst, int tag, std::span<const std::byte> data) {
  MPI_Request request;
  check_mpi(MPI_Isend(data.data(), checked_count(data.size()), MPI_BYTE, dst, tag, impl_->comm.get(), &request),
            "Send");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Send");
  impl_->count_send(data.size());
}

Message MpiCommunicator::recv(int src, int tag) {
  MPI_Message handle;
  MPI_Status status;
  // Matched probe + receive: safe when several threads receive at once.
  wait_until(impl_->sleep, [&] {
    int found = 0;
    check_mpi(MPI_Improbe(src == kAnySource ? MPI_ANY_SOURCE : src, tag, impl_->comm.get(), &found, &handle, &status),
              "Mprobe");
    return found != 0;
  });
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Message m{status.MPI_SOURCE, status.MPI_TAG, std::vector<std::byte>(static_cast<std::size_t>(count))};
  MPI_Request request;
  check_mpi(MPI_Imrecv(m.data.data(), count, MPI_BYTE, &handle, &request), "Mrecv");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Mrecv");
  impl_->count_recv(m.data.size());
  return m;
}

Ticket MpiCommunicator::isend(int dst, int tag, std::vector<std::byte> data) {
  auto s = std::make_unique<RequestState>();
  s->sleep = impl_->sleep;
  s->owned = std::move(data);
  check_mpi(MPI_Isend(s->owned.data(), checked_count(s->owned.size()), MPI_BYTE, dst, tag, impl_->comm.get(),
                      &s->request),
            "Isend");
  impl_->count_send(s->owned.size());
  return Ticket(std::move(s));
}

Ticket MpiCommunicator::irecv(int src, int tag, std::span<std::byte> out) {
  auto s = std::make_unique<RequestState>();
  s->sleep = impl_->sleep;
  s->is_recv = true;
  s->out = out;
  check_mpi(MPI_Irecv(out.data(), checked_count(out.size()), MPI_BYTE, src == kAnySource ? MPI_ANY_SOURCE : src,
                      tag, impl_->comm.get(), &s->request),
            "Irecv");
  impl_->count_recv(out.size());
  return Ticket(std::move(s));
}

void MpiCommunicator::allreduce_sum(std::span<float> data) {
  MPI_Request request;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data.data(), checked_count(data.size()), MPI_FLOAT, MPI_SUM,
                           impl_->comm.get(), &request),
            "Allreduce");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Allreduce");
  // Bandwidth-optimal algorithms send 2(N-1)/N of the buffer per rank.
  std::size_t wire = size_ > 1 ? data.size_bytes() * 2 * (size_ - 1) / size_ : 0;
  impl_->count_send(wire);
  impl_->count_recv(wire);
}

void MpiCommunicator::allreduce_sum(std::span<double> data) {
  MPI_Request request;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data.data(), checked_count(data.size()), MPI_DOUBLE, MPI_SUM,
                           impl_->comm.get(), &request),
            "Allreduce");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Allreduce");
}

void MpiCommunicator::broadcast(std::span<std::byte> data, int root) {
  MPI_Request request;
  check_mpi(MPI_Ibcast(data.data(), checked_count(data.size()), MPI_BYTE, root, impl_->comm.get(), &request),
            "Bcast");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Bcast");
  if (rank_ == root) impl_->count_send(data.size());
  else impl_->count_recv(data.size());
}

std::vector<std::vector<std::byte>> MpiCommunicator::allgather(std::span<const std::byte> mine) {
  int my_count = checked_count(mine.size());
  std::vector<int> counts(size_), displs(size_);
  MPI_Request request;
  check_mpi(MPI_Iallgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, impl_->comm.get(), &request),
            "Allgather");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Allgather");
  std::size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[r] = checked_count(total);
    total += counts[r];
  }
  std::vector<std::byte> flat(total);
  check_mpi(MPI_Iallgatherv(mine.data(), my_count, MPI_BYTE, flat.data(), counts.data(), displs.data(), MPI_BYTE,
                            impl_->comm.get(), &request),
            "Allgatherv");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Allgatherv");
  std::vector<std::vector<std::byte>> all(size_);
  for (int r = 0; r < size_; ++r) all[r].assign(flat.begin() + displs[r], flat.begin() + displs[r] + counts[r]);
  impl_->count_send(mine.size() * (size_ - 1));
  impl_->count_recv(total - mine.size());
  return all;
}

void MpiCommunicator::barrier() {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(impl_->comm.get(), &request), "Barrier");
  wait_request(impl_->sleep, request, MPI_STATUS_IGNORE, "Barrier");
}

CommCounters MpiCommunicator::counters() const {
  return CommCounters{impl_->bytes_sent.load(), impl_->bytes_recv.load(), impl_->messages_sent.load(),
                      impl_->messages_recv.load()};
}

}  // namespace ferry::comm
