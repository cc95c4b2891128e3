// Cost entries of the delayed parameter-server family (train/delayed_ps_strategy.h): OD-SGD,
// SSD-SGD and CD-SGD share one pipeline. After warm-up (W iterations of S-SGD on the
// parameter server) each worker pushes every iteration on its communication thread and pulls
// every p iterations; a pull launched after iteration t is waited for after iteration t+1, so
// one round may take up to one compute. The communication thread runs its tasks in order and
// a pull blocks it until the reply, so a worker's pushes and pulls never overlap; and since
// every worker pulls at the same iterations, the servers' NICs carry the pushes and the
// replies in turn, not at once (the full-duplex overlap eta of a synchronous round does not
// apply). A push shares the servers' ingress with the other workers' pushes of the same
// iteration (incast), a reply their egress:
//
//   S_p   mean push bytes: the codec's payload, with CD-SGD's fp32 push every k-th iteration
//         ((k-1) payload + S)/k
//   push  PS push of S_p: max(S_p/B, n S_p/(s B)) + alpha          (network_model.h)
//   pull  PS pull of S:   max(S/B, n S/(s B)) + 2 alpha (request and reply)
//   R     the pull's round on the comm thread: max(push + pull, servers' CPU) + staging
//   chain (p c + max(0, R - c)) / p                                 (the worker's own path)
//   loop  n (dec + kappa (S_p + S/p) + keys o (1 + 2/p)) / s         (the servers' serial loop)
//   comm  push + enc + kappa S_p + keys o + pull/p + staging         (the worker's comm thread)
//   cpu   (n (c + enc + kappa (S_p + S/p) + keys o (1 + 2/p)) + s loop) / cores
//   T = max(chain, loop, comm, cpu)
// A worker waits T - c st of each iteration (the comm share): on its pull, or on a push when
// kMaxPushesInFlight are queued behind a link-bound comm thread.
// Sources: OD-SGD, Xu et al. 2020; SSD-SGD, Xu, Dong et al. 2020 (p = delay steps); CD-SGD, Yu,
// Dong et al. 2021 (2-bit pushes, fp32 every k-th: k-step correction; compression off the
// critical path, on the communication thread).
#include <algorithm>

#include "advise/cost_model.h"
#include "train/delayed_ps_options.h"

namespace ferry::advise {
namespace {

IterationCost delayed_cost(const CostContext& x, int pull_every, int full_every) {
  const CodecCost& c = x.sc().codec;
  const double S = x.fp32_bytes();
  const double p = std::max(1, pull_every);
  // Share of the iterations whose push goes through the codec.
  const double coded = !c.compressed ? 0.0 : full_every > 0 ? (full_every - 1.0) / full_every : 1.0;
  const double sp = coded * c.push_bytes + (1.0 - coded) * S;
  // Every push passes the worker's velocity (codec_cost.h), the coded ones the encoder too.
  const double enc = c.compressed ? x.momentum_s(c) + coded * x.encode_s(c) : 0.0, dec = coded * x.decode_s(c);
  const LinkModel& l = x.link();
  const double keys = x.keys();
  const double c1 = x.compute1();
  const double push = ps_push_s(l, x.n(), x.s(), sp);
  const double pull = ps_pull_s(l, x.n(), x.s(), S) + l.latency_s;
  const double round = std::max(push + pull, x.ps_server_cpu_s(sp, dec, S, keys)) + x.staging_s(sp + S);
  const double chain = (p * c1 + std::max(0.0, round - c1)) / p;
  const double msgs = keys * (1.0 + 2.0 / p);
  const double loop = x.n() * (dec + x.copy_s(sp + S / p) + msgs * l.message_s) / x.s();
  const double comm = push + enc + x.copy_s(sp) + keys * l.message_s + pull / p + x.staging_s(sp + S / p);
  const double cpu = x.shared_cpu_bound(x.n() * (c1 + enc + x.copy_s(sp + S / p) + msgs * l.message_s) + x.s() * loop);
  const double t = std::max({chain, loop, comm, cpu});
  return {t, std::min(t, c1 * x.stretch(x.n())), sp};
}

using train::CdSgdOptions;
using train::DelayedPsOptions;
using train::SsdSgdOptions;

}  // namespace

void register_delayed_costs() {
  register_algorithm_cost({"odsgd", "T = max(chain, server loop, comm thread push + pull, cores); pull every step",
                           [](const CostContext& x) { return delayed_cost(x, 1, 0); },
                           [](const Scenario& sc) { return DelayedPsOptions::of_spec(sc.algo).warmup_steps; }});
  register_algorithm_cost({"ssdsgd", "as odsgd with a pull every k: chain (k c + max(0, R - c))/k",
                           [](const CostContext& x) {
                             return delayed_cost(x, static_cast<int>(SsdSgdOptions::of_spec(x.sc().algo).delay_steps), 0);
                           },
                           [](const Scenario& sc) { return SsdSgdOptions::of_spec(sc.algo).delayed.warmup_steps; }});
  register_algorithm_cost({"cdsgd", "as odsgd with 2-bit pushes and an fp32 push every k-th step",
                           [](const CostContext& x) {
                             return delayed_cost(x, 1, static_cast<int>(CdSgdOptions::of_spec(x.sc().algo).correction_steps));
                           },
                           [](const Scenario& sc) { return CdSgdOptions::of_spec(sc.algo).delayed.warmup_steps; }});
}

}  // namespace ferry::advise
