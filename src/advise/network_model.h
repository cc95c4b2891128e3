// Time of ferry's collectives and parameter-server exchanges on an alpha-beta link, as the link
// emulator (comm/link/shaped_communicator.h) paces them: every rank has a NIC of bandwidth B
// applied on egress and on ingress, each message pays the latency alpha once, and a message
// also costs its sender and receiver `message_s` of software (framing, MPI, the server's
// serial receive loop). Seconds; bytes are per worker unless said otherwise.
//
//   ring allreduce (gloo / Baidu; comm/p2p_collectives.cc): reduce-scatter + allgather,
//     2(n-1) steps of S/n bytes:                 T = 2(n-1) (S/(nB) + alpha + o)
//   ring allgather of p bytes per rank:          T = (n-1) (p/B + alpha + o)
//   binomial-tree allreduce (reduce + broadcast, for projections; MPI's small-message choice):
//                                                T = 2 ceil(log2 n) (S/B + alpha + o)
//   parameter-server push, n workers into s servers (incast: the servers' ingress is shared):
//                                                T = max(S/B, n S/(s B)) + alpha
//   parameter-server pull replies (the servers' egress is shared):
//                                                T = max(S/B, n S/(s B)) + alpha
#pragma once

namespace ferry::advise {

struct LinkModel {
  double bandwidth_bytes_per_s = 0;  // per NIC, each direction; <= 0 or inf: no wire time
  double latency_s = 0;              // one way, per message
  double message_s = 0;              // software cost per message (calibrated)
  // Seconds `bytes` occupy one NIC.
  double wire_s(double bytes) const;
};

double ring_allreduce_s(const LinkModel& link, int ranks, double bytes);
double ring_allgather_s(const LinkModel& link, int ranks, double bytes_per_rank);
double tree_allreduce_s(const LinkModel& link, int ranks, double bytes);
// Until the last of `workers` pushes of `bytes` each has reached its server.
double ps_push_s(const LinkModel& link, int workers, int servers, double bytes);
// Until the last worker has the reply to its pull of `bytes` (the whole model).
double ps_pull_s(const LinkModel& link, int workers, int servers, double bytes);

}  // namespace ferry::advise
