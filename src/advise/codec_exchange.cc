// What a codec costs a run, charged where the run pays it (docs/advise.md, "Codecs in the run").
// The times are the profiler's (codec_cost.h: one core, the model's tensors as the strategies
// build their codecs), scaled onto the device; a CPU pass that every worker makes at once is
// stretched by st = st(n), as the compute is. Per element, each pass is linear in the tensors it
// reads; per message, each collective a codec makes pays its latency and software cost.
//
//   worker (before a push or the exchange):  W = mom + enc       (mom: the worker's velocity
//       pass where the spec puts the momentum on the worker; enc: encode + masking)
//   the allreduce exchange (S-SGD's, DiLoCo's outer gradient):
//     none:   E = AR(S) + kappa 4(n-1)/n S st
//     codec:  E = AR(R) + (calls - 1) 2(n-1)(alpha + o) + kappa 4(n-1)/n R st   (R: the fp32
//                 floats of the custom schemes and raw 1-D tensors, in `calls` ring allreduces)
//               + st custom + st enc_ag + AG(P) + kappa 2(n-1) P st + st n dec_ag
//             (P: the allgathered payloads; enc_ag, dec_ag: their encode and decode-add only)
//   S-SGD's agreement on a finite gradient before a coded exchange: F = AG(1 byte) = (n-1)(alpha + o)
//   a parameter-server round: the servers decode-add every worker's payload (CostContext::ps_round_s)
#include <algorithm>

#include "advise/cost_model.h"

namespace ferry::advise {

double worker_codec_s(const CostContext& x, const CodecCost& c) {
  return c.compressed ? x.momentum_s(c) + x.encode_s(c) : 0.0;
}

double finite_flag_s(const CostContext& x) { return ring_allgather_s(x.link(), x.n(), 1.0); }

double allreduce_exchange_s(const CostContext& x, const CodecCost& c) {
  const int n = x.n();
  const double st = x.stretch(n);
  double t = 0;
  if (c.ring_bytes > 0) {
    t += ring_allreduce_s(x.link(), n, c.ring_bytes) + x.copy_s(4.0 * (n - 1) / n * c.ring_bytes) * st;
    if (c.ring_calls > 1) t += (c.ring_calls - 1) * 2.0 * (n - 1) * (x.link().latency_s + x.link().message_s);
  }
  if (!c.compressed) return t + x.staging_s(2 * c.ring_bytes);
  t += x.custom_s(c) * st;
  if (c.allgather_bytes > 0)
    t += x.allgather_encode_s(c) * st + ring_allgather_s(x.link(), n, c.allgather_bytes) +
         x.copy_s(2.0 * (n - 1) * c.allgather_bytes) * st + n * x.allgather_decode_s(c) * st;
  return t + x.staging_s(c.ring_bytes + c.allgather_bytes + x.fp32_bytes());
}

double allreduce_bytes_sent(const CostContext& x, const CodecCost& c) {
  const int n = x.n();
  return 2.0 * (n - 1) / n * c.ring_bytes + (n - 1) * c.allgather_bytes;
}

}  // namespace ferry::advise
