// Cost entries of the synchronous family and the floor: S-SGD (allreduce and parameter server),
// ASGD, WFBP with tensor fusion, compute-only. Notation (docs/advise.md): n workers, s servers,
// c = one worker's compute alone, st = stretch(n) (n ranks sharing the cores), S the fp32
// gradient bytes, AR/AG the ring allreduce/allgather times and PS the parameter-server round
// of cost_model.h, kappa the copy cost per byte; W, F and E a codec's worker pass, S-SGD's
// finite-flag agreement and the allreduce exchange (codec_exchange.cc).
#include <algorithm>
#include <vector>

#include "advise/cost_model.h"
#include "advise/queueing.h"
#include "train/wfbp_options.h"

namespace ferry::advise {

namespace {

// S-SGD (Zinkevich et al. 2010 as data parallelism; Goyal et al. 2017): every worker computes,
// then the gradients are summed and the step taken before the next compute starts.
//   allreduce: T = c st + E                       (fp32)
//              T = c st + st W + F + E            (a codec: codec_exchange.cc)
//   ps:        T = c st + st W + PS(payload, fp32 replies)
IterationCost ssgd_cost(const CostContext& x) {
  const CodecCost& c = x.sc().codec;
  const double st = x.stretch(x.n());
  const double compute = x.compute1() * st;
  const double enc = worker_codec_s(x, c) * st;
  if (x.sc().topology == train::Topology::kAllreduce) {
    const double flag = c.compressed ? finite_flag_s(x) : 0.0;
    return {compute + enc + flag + allreduce_exchange_s(x, c), compute, allreduce_bytes_sent(x, c)};
  }
  const double round = x.ps_round_s(c.push_bytes, c.compressed ? x.decode_s(c) : 0.0, x.fp32_bytes(), x.keys());
  return {compute + enc + round, compute, c.push_bytes};
}

// ASGD (Dean et al. 2012, Downpour): each worker pushes, the server applies it at once, the
// worker pulls and goes on; nobody waits for anybody. A closed queueing network (queueing.h):
// n workers cycle through the servers' ingress (S_p/(sB) per push), their serial loop
// ((dec + kappa (S_p + S) + 3 K o)/s) and their egress (S/(sB) per reply), and a delay of their
// own compute, encode, copies and latency. The compute is stretched by the ranks that compute
// at once, the delay's share of the n workers (a fixed point). Bounded by the shared cores:
//   T = max(MVA cycle, (n (c + enc + kappa (S_p + S)) + s server loop)/cores)
IterationCost asgd_cost(const CostContext& x) {
  const CodecCost& c = x.sc().codec;
  const double S = x.fp32_bytes(), sp = c.push_bytes;
  const double enc = worker_codec_s(x, c), dec = c.compressed ? x.decode_s(c) : 0.0;
  const LinkModel& l = x.link();
  const double one_push_server = dec + x.copy_s(sp + S) + 3.0 * x.keys() * l.message_s;
  const std::vector<double> stations{l.wire_s(sp) / x.s(), one_push_server / x.s(), l.wire_s(S) / x.s()};
  const double fixed = enc + x.copy_s(sp + S) + 2 * l.latency_s + x.staging_s(sp + S);
  double compute = x.compute1() * x.stretch(x.n()), cycle = 0;
  for (int i = 0; i < 8; ++i) {  // ranks computing at once = n compute / cycle
    cycle = mva_cycle_s(x.n(), stations, compute + fixed);
    if (!(cycle > 0)) break;
    compute = 0.5 * (compute + x.compute1() * x.stretch(x.n() * compute / cycle));
  }
  const double server_loop = x.n() * one_push_server / x.s();
  const double cpu = x.shared_cpu_bound(x.n() * (x.compute1() + enc + x.copy_s(sp + S)) + x.s() * server_loop);
  const double t = std::max(cycle, cpu);
  return {t, std::min(t, compute), sp};
}

// WFBP (Zhang et al. 2017, Poseidon) with tensor fusion (Horovod) and front-layers-first
// completion (ByteScheduler, P3). Buckets of ~bucket_mb from the last tensor backwards (as
// wfbp_strategy.cc builds them); bucket j is ready when backward has produced its last
// gradient, r_j = Bk max(backward_ready), and goes out on the communication thread at once:
//   start_j = max(r_j, finish_{j-1}),  finish_j = start_j + comm_j
// (comm_j = AR(bytes_j) or PS(bytes_j)). The next forward enters bucket j's first layer at
// Bk + U + F min(forward_start_j) unless it must wait; every wait shifts what follows, so
//   T = F + Bk + U + max(0, max_j (finish_j - Bk - U - F min(forward_start_j)))
// with F, Bk, U the stretched forward, backward and update. One bucket is S-SGD exactly.
IterationCost wfbp_cost(const CostContext& x) {
  const auto& tensors = x.sc().model->tensors;
  const double st = x.stretch(x.n());
  const double F = x.forward1() * st, Bk = x.backward1() * st;
  const double U = std::max(0.0, x.compute1() * st - F - Bk);
  const double bucket_mb = train::WfbpOptions::of_spec(x.sc().algo.empty() ? "wfbp" : x.sc().algo).bucket_mb;
  const double bucket_elems = std::max(1.0, bucket_mb * 1e6 / 4.0);
  struct Bucket {
    double elems = 0, ready = 0, fwd = 1;
  };
  std::vector<Bucket> buckets;
  for (std::size_t i = tensors.size(); i-- > 0;) {
    if (buckets.empty() || buckets.back().elems >= bucket_elems) buckets.emplace_back();
    Bucket& b = buckets.back();
    b.elems += static_cast<double>(tensors[i].numel);
    b.ready = std::max(b.ready, tensors[i].backward_ready);
    b.fwd = std::min(b.fwd, tensors[i].forward_start);
  }
  const bool ps = x.sc().topology == train::Topology::kParameterServer;
  double finish = 0, late = 0;
  for (const Bucket& b : buckets) {
    const double bytes = 4.0 * b.elems;
    // Bucket pushes of one round, each key a message; a bucket holds about its share of keys.
    const double keys = std::max(1.0, x.keys() * b.elems / static_cast<double>(x.sc().model->parameters()));
    const double comm = ps ? x.ps_round_s(bytes, 0.0, bytes, keys)
                           : ring_allreduce_s(x.link(), x.n(), bytes) + x.copy_s(4.0 * (x.n() - 1) / x.n() * bytes) * st;
    finish = std::max(Bk * b.ready, finish) + comm;
    late = std::max(late, finish - (Bk + U + F * b.fwd));
  }
  const double compute = F + Bk + U;
  const double S = x.fp32_bytes();
  return {compute + late, compute, ps ? S : 2.0 * (x.n() - 1) / x.n() * S};
}

// Not a training algorithm: the iteration-time floor, T = c st.
IterationCost compute_only_cost(const CostContext& x) {
  const double t = x.compute1() * x.stretch(x.n());
  return {t, t, 0.0};
}

}  // namespace

void register_sync_costs() {
  register_algorithm_cost({"ssgd", "T = c st + AR(S) | c st + PS(S_p)", ssgd_cost, {}});
  register_algorithm_cost({"asgd", "T = max(MVA cycle through the servers' NICs and loop, shared cores)", asgd_cost, {}});
  register_algorithm_cost({"wfbp", "T = F + Bk + U + lateness of the last-needed bucket", wfbp_cost, {}});
  register_algorithm_cost({"compute-only", "T = c st", compute_only_cost, {}});
}

}  // namespace ferry::advise
