#include "comm/p2p_collectives.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace ferry::comm {
namespace {

// Chunk c of n elements split into `parts` nearly equal pieces: [begin, end).
std::pair<std::size_t, std::size_t> chunk(std::size_t n, int parts, int c) {
  std::size_t base = n / parts, rem = n % parts;
  std::size_t begin = c * base + std::min<std::size_t>(c, rem);
  return {begin, begin + base + (static_cast<std::size_t>(c) < rem ? 1 : 0)};
}

template <typename T>
std::vector<std::byte> to_bytes(std::span<const T> s) {
  std::vector<std::byte> out(s.size_bytes());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size_bytes());
  return out;
}

}  // namespace

template <typename T>
void ring_allreduce_sum(Communicator& comm, std::span<T> data) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1 || data.empty()) return;
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  std::vector<T> incoming;
  // Reduce-scatter: after step s, rank r holds the full sum of chunk (r - s - 1) mod n... at the end
  // rank r owns the complete sum of chunk (r + 1) mod n.
  for (int s = 0; s < n - 1; ++s) {
    int send_c = (r - s + n) % n, recv_c = (r - s - 1 + n) % n;
    auto [sb, se] = chunk(data.size(), n, send_c);
    auto [rb, re] = chunk(data.size(), n, recv_c);
    Ticket t = comm.isend(right, kTagAllreduce, to_bytes(std::span<const T>(data.data() + sb, se - sb)));
    incoming.resize(re - rb);
    comm.irecv(left, kTagAllreduce, std::as_writable_bytes(std::span<T>(incoming))).wait();
    for (std::size_t i = 0; i < incoming.size(); ++i) data[rb + i] += incoming[i];
    t.wait();
  }
  // Allgather of the reduced chunks.
  for (int s = 0; s < n - 1; ++s) {
    int send_c = (r + 1 - s + n) % n, recv_c = (r - s + n) % n;
    auto [sb, se] = chunk(data.size(), n, send_c);
    auto [rb, re] = chunk(data.size(), n, recv_c);
    Ticket t = comm.isend(right, kTagAllreduce, to_bytes(std::span<const T>(data.data() + sb, se - sb)));
    comm.irecv(left, kTagAllreduce, std::as_writable_bytes(data.subspan(rb, re - rb))).wait();
    t.wait();
  }
}

template void ring_allreduce_sum<float>(Communicator&, std::span<float>);
template void ring_allreduce_sum<double>(Communicator&, std::span<double>);

void tree_broadcast(Communicator& comm, std::span<std::byte> data, int root) {
  const int n = comm.size();
  FERRY_CHECK(root >= 0 && root < n, "broadcast root ", root, " outside world of ", n);
  if (n == 1) return;
  const int vr = (comm.rank() - root + n) % n;  // rank relative to the root
  // Binomial tree: receive from the parent (clear lowest set bit), then send to children.
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      int parent = ((vr - mask) + root) % n;
      comm.irecv(parent, kTagBroadcast, data).wait();
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  std::vector<Ticket> sends;
  for (; mask > 0; mask >>= 1) {
    if (vr + mask < n) {
      std::vector<std::byte> copy(data.begin(), data.end());
      sends.push_back(comm.isend((vr + mask + root) % n, kTagBroadcast, std::move(copy)));
    }
  }
  for (auto& t : sends) t.wait();
}

std::vector<std::vector<std::byte>> ring_allgather(Communicator& comm, std::span<const std::byte> mine) {
  const int n = comm.size(), r = comm.rank();
  std::vector<std::vector<std::byte>> all(n);
  all[r].assign(mine.begin(), mine.end());
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  for (int s = 0; s < n - 1; ++s) {
    int send_i = (r - s + n) % n, recv_i = (r - s - 1 + n) % n;
    Ticket t = comm.isend(right, kTagAllgather, all[send_i]);
    all[recv_i] = comm.recv(left, kTagAllgather).data;
    t.wait();
  }
  return all;
}

void dissemination_barrier(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  std::byte token{0};
  for (int d = 1; d < n; d <<= 1) {
    Ticket t = comm.isend((r + d) % n, kTagBarrier, std::vector<std::byte>{token});
    comm.recv((r - d + n) % n, kTagBarrier);
    t.wait();
  }
}

}  // namespace ferry::comm
