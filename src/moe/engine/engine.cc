#include "moe/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/memory_room.h"
#include "core/units.h"
#include "moe/engine/decode_attention.h"
#include "moe/engine/expert_call.h"
#include "moe/engine/expert_group.h"
#include "moe/engine/kv_cache.h"
#include "moe/quant/quant_type.h"
#include "moe/engine/timed_policy.h"
#include "moe/model/decoder_ops.h"
#include "moe/model/mla.h"
#include "moe/model/weights.h"
#include "moe/sched/layer_protocol.h"

namespace ferry::moe {

struct MoeEngine::Impl {
  // A sequence the engine holds: its cache and where it walks a replayed trace.
  struct Sequence {
    KvCache kv;
    std::size_t routing_offset = 0;
  };

  std::unique_ptr<Checkpoint> ck;
  DenseWeights w;
  std::unique_ptr<HostPool> pool;
  std::unique_ptr<ExpertStore> store;
  std::unique_ptr<Policy> policy;
  RouterView routers;
  CostModel cost;
  ComputeProfile profile;
  EngineOptions options;
  std::uint64_t budget = 0;
  MemoryPlan plan;
  std::uint64_t kv_reserve = 0;
  torch::Tensor rope_cos, rope_sin;           // [max_pos, rotary dims]
  std::map<int, Sequence> sequences;          // every open sequence, step()'s and forward()'s
  std::vector<int> lockstep;                  // forward()'s batch, row b = sequences[lockstep[b]]
  int next_sequence = 0;
  EngineStats stats;
  RouteObserver observer;
  std::unique_ptr<TimedAdvisor> advisor;
  std::vector<const TraceToken*> forced;  // routing replay: the trace's decode tokens, in order
  std::vector<std::size_t> forced_rows;   // ... the one of each row of the current step

  Sequence& sequence(int id);
  // The one decoding path: every input's tokens through every layer, its own KV cache for attention,
  // all routed tokens together through the offloading protocol. Returns the logits of each input's
  // last position, or of every position when all_positions.
  std::vector<float> run(const std::vector<MoeEngine::SequenceInput>& inputs, bool all_positions);
  // Self-attention of layer l over x [1, T, H] (residual added) against the sequence's positions.
  void attention(int l, torch::Tensor& x, KvCache& kv);
  std::unique_ptr<LayerProtocol> protocol;  // over `policy`, timed into stats.policy_s
  // Decoder layer l's MLP on x [N, H]: its routed experts through the offloading protocol plus
  // the shared expert, or its dense MLP.
  torch::Tensor mlp(int l, const torch::Tensor& x);
  torch::Tensor embed(const std::vector<std::int64_t>& ids) const;
  void compute_layer(int l, const torch::Tensor& m, const std::vector<ExpertWork>& work, const LayerDispatch& d,
                     torch::Tensor& out);
};

MoeEngine::MoeEngine() : impl_(std::make_unique<Impl>()) {}
MoeEngine::~MoeEngine() {
  if (impl_ && impl_->store) impl_->store.reset();  // joins the I/O thread before the pool goes
}

std::string resolved_link(const std::string& model_dir, const EngineOptions& options) {
  return resolve_auto_link(options.link, std::filesystem::is_regular_file(model_dir) && options.weights.empty());
}

namespace {

// The bytes of the checkpoint's files: the GGUF file, or the directory's safetensors shards.
std::uint64_t checkpoint_file_bytes(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(model_dir, ec)) return fs::file_size(model_dir, ec);
  std::uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(model_dir, ec))
    if (e.path().extension() == ".safetensors" && e.is_regular_file(ec)) total += e.file_size(ec);
  return total;
}

// What the budget must leave room for (memory_plan.h), the dense weights estimated as the
// checkpoint's bytes less its experts' as stored; `room` sizes the auto KV reserve.
MemoryNeeds memory_needs(const Checkpoint& ck, const HostPool& pool, const EngineOptions& o, bool from_disk,
                         const MemoryRoom& room) {
  const MoeConfig& c = ck.config();
  MemoryNeeds n;
  n.total_expert_bytes = pool.total_bytes();
  n.expert_bytes = pool.layout().bytes();
  n.min_budget_bytes = static_cast<std::uint64_t>(c.top_k) * n.expert_bytes;
  n.host_copy_bytes = from_disk ? 0 : pool.total_bytes();
  FERRY_REQUIRE_POSITIVE(o.max_sequences, "max_sequences");
  if (o.kv_mem == "auto") {
    const std::uint64_t contexts = kv_cache_bytes(c, c.max_position_embeddings) * static_cast<std::uint64_t>(o.max_sequences);
    n.kv_bytes = std::min(contexts, room.bytes / 8);
  } else {
    n.kv_bytes = parse_bytes(o.kv_mem);
  }
  n.workspace_bytes = step_workspace_bytes(o.max_step_tokens, c.max_position_embeddings, c.hidden_size,
                                           c.intermediate_size, c.num_heads, c.vocab_size);
  // The experts' bytes in the file (their stored format may be one --weights converts from).
  std::uint64_t stored = pool.total_bytes();
  try {
    stored = HostPool::load(ck, /*with_data=*/false)->total_bytes();
  } catch (const std::exception&) {
  }
  const std::uint64_t files = checkpoint_file_bytes(ck.dir());
  n.dense_bytes = files > stored ? files - stored : 0;
  return n;
}

}  // namespace

bool streams_from_disk(const std::string& model_dir, const EngineOptions& options) {
  register_builtin_links();
  if (link_entry(parse_link_spec(resolved_link(model_dir, options)).kind).keeps_host_copy) return false;
  if (!parse_device_mem(options.device_mem).automatic) return true;
  // auto: streams unless every expert is expected to be resident (the estimate before loading).
  try {
    const auto ck = Checkpoint::open(model_dir);
    const auto format = options.weights.empty() ? std::nullopt : std::optional(quant::parse_weight_format(options.weights));
    const auto pool = HostPool::load(*ck, /*with_data=*/false, format);
    const MemoryRoom room = memory_room();
    return !plan_memory("auto", memory_needs(*ck, *pool, options, true, room), room).resident;
  } catch (const std::exception&) {
    return true;  // MoeEngine::open() reports what is wrong
  }
}

std::unique_ptr<MoeEngine> MoeEngine::open(const std::string& model_dir, const EngineOptions& options) {
  register_builtin_links();
  register_builtin_policies();
  std::unique_ptr<MoeEngine> eng(new MoeEngine());
  Impl& m = *eng->impl_;
  m.options = options;
  parse_compute_profile(options.compute);  // a bad spec fails before loading
  // The predictor the policy is given (prescope; next-gate on the model's routers unless the caller
  // chose one) is timed into stats.predictor_s. Policies that do not take one ignore the factory.
  PolicyInputs po = options.policy_inputs;
  {
    double* total = &m.stats.predictor_s;
    po.wrap_predictor = [total](std::unique_ptr<Predictor> p) -> std::unique_ptr<Predictor> {
      return std::make_unique<TimedPredictor>(std::move(p), total);
    };
  }
  const bool auto_policy = options.policy == "auto";
  if (!auto_policy) m.policy = make_policy(options.policy, po);  // early: a bad spec fails before loading
  m.ck = Checkpoint::open(model_dir);
  const std::string link_text = resolved_link(model_dir, options);
  const std::string link_kind = parse_link_spec(link_text).kind;
  m.profile = parse_compute_profile(resolve_auto_compute(options.compute, link_kind));
  const MoeConfig& c = m.ck->config();
  if (const RoutingTrace* t = options.forced_routing) {
    FERRY_REQUIRE(t->num_layers == c.num_moe_layers() && t->num_experts <= c.num_experts && t->top_k == c.top_k,
                  "routing trace '", t->path, "' (", t->num_layers, " layers, ", t->num_experts, " experts, top-",
                  t->top_k, ") does not match the model (", c.num_moe_layers(), " MoE layers, ", c.num_experts,
                  " experts, top-", c.top_k, ")");
    for (const auto& tok : t->tokens) {
      if (tok.prefill) continue;
      FERRY_REQUIRE(static_cast<int>(tok.experts.size()) == c.num_moe_layers(), "routing trace '", t->path,
                    "': a token without every layer");
      for (const auto& ex : tok.experts) {
        FERRY_REQUIRE(static_cast<int>(ex.size()) == c.top_k, "routing trace '", t->path, "': a token routed to ",
                      ex.size(), " experts, expected ", c.top_k);
        for (std::size_t k = 0; k < ex.size(); ++k)
          FERRY_REQUIRE(ex[k] >= 0 && ex[k] < c.num_experts && std::find(ex.begin(), ex.begin() + k, ex[k]) == ex.begin() + k,
                        "routing trace '", t->path, "': expert ", ex[k], " out of range or repeated in a token");
      }
      m.forced.push_back(&tok);
    }
    FERRY_REQUIRE(!m.forced.empty(), "routing trace '", t->path, "' has no decode tokens");
  }
  // A link that reads the checkpoint itself (file) leaves no host copy: the experts stream from
  // disk into the device budget (the whole point when they do not fit in memory), and none can
  // run on the host, whatever the policy would choose.
  const bool from_disk = !link_entry(link_kind).keeps_host_copy;
  const auto format = options.weights.empty() ? std::nullopt : std::optional(quant::parse_weight_format(options.weights));
  m.pool = HostPool::load(*m.ck, /*with_data=*/false, format);  // the layout: what the budget is made of
  // The budget, checked before anything is read against an estimate of the dense weights, then
  // against what the process may use once they are in (memory_plan.h).
  const MemoryRoom room_at_start = memory_room();
  MemoryNeeds needs = memory_needs(*m.ck, *m.pool, options, from_disk, room_at_start);
  m.kv_reserve = needs.kv_bytes;
  plan_memory(options.device_mem, needs, room_at_start);
  m.w = load_dense_weights(*m.ck, options.dense_as_stored);
  // Streaming from disk: the dense weights are copied out, so the mapping of a file that may be
  // larger than memory keeps none of its pages (the experts bypass the page cache: O_DIRECT).
  if (from_disk) m.ck->release_pages();
  needs.dense_bytes = 0;  // in the room now
  m.plan = plan_memory(options.device_mem, needs, memory_room());
  m.budget = m.plan.budget_bytes;
  if (!from_disk) m.pool = HostPool::load(*m.ck, /*with_data=*/true, format);
  const std::uint64_t eb = m.pool->layout().bytes();
  const std::uint64_t need = static_cast<std::uint64_t>(c.top_k) * eb;
  if (m.budget < need)
    FERRY_THROW(InvalidArgument, "--device-mem ", options.device_mem, " (", format_bytes(static_cast<double>(m.budget)),
                ") is smaller than one layer's active experts: top_k ", c.top_k, " x ",
                format_bytes(static_cast<double>(eb)), " = ", format_bytes(static_cast<double>(need)));
  // auto: a resident model needs no prefetching (lru, every expert loaded now); else PreScope.
  if (auto_policy) m.policy = make_policy(m.plan.resident ? "lru" : "prescope", po);
  const bool preload = options.preload || (auto_policy && m.plan.resident);

  // Batch-1 compute time of one expert on this CPU: the cost model when no profile is given.
  const double measured = measure_expert_call_s(m.pool->layout(), c);
  m.cost.device_expert_s = m.profile.device_expert_s > 0 ? m.profile.device_expert_s : measured;
  m.cost.host_token_s = m.profile.host_token_s > 0 ? m.profile.host_token_s : measured;
  m.cost.host_available = !from_disk;

  LinkSpec spec = resolve_scaled_link(link_text, eb, m.cost.device_expert_s);
  spec.chunk_bytes = options.chunk_bytes;
  auto link = make_link(spec, LinkSource{m.pool.get(), m.ck.get()});
  m.cost.transfer_s = link->estimate_s(eb);
  m.store = std::make_unique<ExpertStore>(m.pool.get(), std::move(link), ExpertStoreOptions{m.budget});
  m.advisor = std::make_unique<TimedAdvisor>(m.policy.get(), &m.stats.policy_s);
  m.store->set_advisor(m.advisor.get());

  m.routers = router_view(m.w);
  if (preload) {
    std::vector<ExpertId> all;
    for (int l = 0; l < c.num_moe_layers(); ++l)
      for (int e = 0; e < c.num_experts; ++e) all.push_back({l, e});
    m.store->preload(all);
  }
  m.policy->attach(PolicyContext{m.store.get(), &m.routers, c.num_moe_layers(), c.num_experts, c.top_k, m.cost});
  m.protocol = std::make_unique<LayerProtocol>(*m.policy, &m.stats.policy_s, m.cost.host_available);
  m.stats.policy_s = m.stats.predictor_s = 0;  // set-up is not per-token work

  auto freqs = torch::outer(torch::arange(0, c.max_position_embeddings, torch::kFloat64), rope_inv_freq(c));
  auto emb = torch::cat({freqs, freqs}, -1);
  m.rope_cos = (emb.cos() * rope_attention_factor(c)).to(torch::kFloat32);
  m.rope_sin = (emb.sin() * rope_attention_factor(c)).to(torch::kFloat32);
  m.stats.expert_counts.assign(static_cast<std::size_t>(c.num_moe_layers()) * c.num_experts, 0);
  m.stats.budget_bytes = m.budget;
  eng->reset();
  m.store->reset_stats();
  return eng;
}

void MoeEngine::reset() {
  for (int id : impl_->lockstep) impl_->sequences.erase(id);
  impl_->lockstep.clear();
}

int MoeEngine::open_sequence(const SequenceOptions& options) {
  const int id = impl_->next_sequence;
  impl_->sequences.emplace(id, Impl::Sequence{KvCache(impl_->w.config, options.max_positions), options.routing_offset});
  ++impl_->next_sequence;
  return id;
}

void MoeEngine::close_sequence(int sequence) {
  FERRY_REQUIRE(std::find(impl_->lockstep.begin(), impl_->lockstep.end(), sequence) == impl_->lockstep.end(),
                "close_sequence: sequence ", sequence, " belongs to forward()'s batch (reset() closes it)");
  FERRY_REQUIRE(impl_->sequences.erase(sequence) == 1, "close_sequence: unknown sequence ", sequence);
}

bool MoeEngine::rewind_sequence(int sequence, std::int64_t positions, std::int64_t max_positions) {
  return impl_->sequence(sequence).kv.rewind(positions, max_positions);
}

MoeEngine::Impl::Sequence& MoeEngine::Impl::sequence(int id) {
  auto it = sequences.find(id);
  FERRY_REQUIRE(it != sequences.end(), "unknown sequence ", id);
  return it->second;
}

std::int64_t MoeEngine::sequence_position(int sequence) const { return impl_->sequence(sequence).kv.pos(); }

const MoeConfig& MoeEngine::config() const { return impl_->w.config; }
std::uint64_t MoeEngine::expert_bytes() const { return impl_->pool->layout().bytes(); }
std::uint64_t MoeEngine::total_expert_bytes() const { return impl_->pool->total_bytes(); }
const MemoryPlan& MoeEngine::memory_plan() const { return impl_->plan; }
std::uint64_t MoeEngine::kv_reserve_bytes() const { return impl_->kv_reserve; }
std::int64_t MoeEngine::kv_cached_positions() const {
  std::int64_t n = 0;
  for (const auto& [id, seq] : impl_->sequences) n += seq.kv.cached_positions();
  return n;
}
std::uint64_t MoeEngine::kv_bytes() const {
  std::uint64_t n = 0;
  for (const auto& [id, seq] : impl_->sequences) n += seq.kv.bytes();
  return n;
}
const CostModel& MoeEngine::cost_model() const { return impl_->cost; }
void MoeEngine::set_route_observer(RouteObserver observer) { impl_->observer = std::move(observer); }

EngineStats MoeEngine::stats() const {
  EngineStats s = impl_->stats;
  s.store = impl_->store->stats();
  const ProtocolCounts& counts = impl_->protocol->counts();
  s.expert_accesses = counts.accesses;
  s.hits = counts.hits;
  s.host_execs = counts.host_placed;
  return s;
}

void MoeEngine::reset_stats() {
  auto counts = impl_->stats.expert_counts;
  impl_->stats = EngineStats{};  // keeps its address: the timed predictor and advisor add into it
  impl_->stats.expert_counts.assign(counts.size(), 0);
  impl_->stats.budget_bytes = impl_->budget;
  impl_->store->reset_stats();
  impl_->protocol->reset_counts();
}

std::string MoeEngine::describe() const {
  std::ostringstream s;
  const auto& m = *impl_;
  s << "policy " << m.policy->name() << ", device budget " << format_bytes(static_cast<double>(m.budget)) << " ["
    << m.plan.summary << "] ("
    << m.budget / m.pool->layout().bytes() << " of " << m.pool->num_layers() * m.pool->num_experts()
    << " experts), KV cache " << format_bytes(static_cast<double>(kv_cache_bytes(m.ck->config(), 1)))
    << "/token, link " << m.store->link().describe() << ", compute " << m.profile.name << " (device expert "
    << format_duration(m.cost.device_expert_s) << ", host "
    << (m.cost.host_available ? format_duration(m.cost.host_token_s) + "/token" : std::string("none: no host copy"))
    << "), transfer/compute " << (m.cost.device_expert_s > 0 ? m.cost.transfer_s / m.cost.device_expert_s : 0)
    << "x";
  return s.str();
}

namespace {

// softmax over the keys of scores [B, heads, T, S]; with attention sinks (gpt-oss), each head's
// sink logit joins the denominator as one more key without a value: probabilities that sum below 1.
torch::Tensor attention_probs(const torch::Tensor& scores, const LayerWeights& lw) {
  if (!lw.sinks.defined()) return torch::softmax(scores, -1);
  const auto sinks = lw.sinks.view({1, -1, 1, 1}).expand({scores.size(0), scores.size(1), scores.size(2), 1});
  const std::int64_t S = scores.size(3);
  return torch::softmax(torch::cat({scores, sinks}, -1), -1).slice(-1, 0, S);
}

}  // namespace

void MoeEngine::Impl::attention(int l, torch::Tensor& x, KvCache& kv) {
  const MoeConfig& c = w.config;
  const std::int64_t B = x.size(0), T = x.size(1), pos = kv.pos();
  const LayerWeights& lw = w.layers[l];
  if (c.mla()) {  // latent attention: the cache holds each position's latent (moe/model/mla.h)
    const std::int64_t half = c.rotary_dims() / 2;  // the tables hold cat(freqs, freqs)
    const MlaInputs in = mla_project(rms_norm(x, lw.attn_norm, c.rms_norm_eps), lw, c,
                                     rope_cos.slice(0, pos, pos + T).slice(-1, 0, half),
                                     rope_sin.slice(0, pos, pos + T).slice(-1, 0, half));
    const torch::Tensor latents = kv.append(l, in.latent, torch::empty({1, 1, T, 0})).first;
    torch::Tensor hidden;  // query i (position pos + i) sees keys j <= pos + i
    if (T > 1)
      hidden = torch::arange(0, latents.size(2), torch::kInt64).view({1, -1}) >
               torch::arange(pos, pos + T, torch::kInt64).view({T, 1});
    x = x + project_out(mla_attend(in, latents, hidden, lw, c), lw);
    return;
  }
  const std::int64_t D = c.head_dim, nh = c.num_heads, kvh = c.num_kv_heads;
  auto [q, k, v] = project_qkv(rms_norm(x, lw.attn_norm, c.rms_norm_eps), lw, c);
  if (B == 1 && T == 1) {  // a decode step: decode_attention.h, the same formulas without operators
    q = q.contiguous();
    k = k.contiguous();
    const std::int64_t R = c.rotary_dims();
    const float* cos_row = rope_cos.data_ptr<float>() + pos * R;
    const float* sin_row = rope_sin.data_ptr<float>() + pos * R;
    rope_in_place(q.data_ptr<float>(), nh, D, R, cos_row, sin_row);
    rope_in_place(k.data_ptr<float>(), kvh, D, R, cos_row, sin_row);
    auto [kk, vv] = kv.append(l, k, v);
    FERRY_CHECK(kk.stride(3) == 1 && vv.stride(3) == 1 && kk.stride(1) == vv.stride(1) &&
                    kk.stride(2) == vv.stride(2),
                "the KV cache's layers are not laid out as the decode attention reads them");
    CachedKv cached{kk.data_ptr<float>(), vv.data_ptr<float>(), kk.stride(1), kk.stride(2), 0, kk.size(2)};
    // With a window, cache index j (position start + j) is seen when start + j > pos - W.
    if (c.windowed(l)) cached.first = std::max<std::int64_t>(0, pos - c.sliding_window + 1 - kv.start(l));
    auto out = torch::empty({1, 1, nh * D});
    attend_one_position(q.data_ptr<float>(), nh, kvh, D, cached, static_cast<float>(1.0 / std::sqrt(static_cast<double>(D))),
                        lw.sinks.defined() ? lw.sinks.contiguous().data_ptr<float>() : nullptr, out.data_ptr<float>());
    x = x + project_out(out, lw);
    return;
  }
  auto cos = rope_cos.slice(0, pos, pos + T), sin = rope_sin.slice(0, pos, pos + T);
  auto rot = [&, R = std::int64_t{c.rotary_dims()}](const torch::Tensor& t) {  // rotate-half over the first R dims
    auto r = R == D ? t : t.slice(-1, 0, R);
    auto t1 = r.slice(-1, 0, R / 2), t2 = r.slice(-1, R / 2, R);
    auto turned = r * cos + torch::cat({-t2, t1}, -1) * sin;
    return R == D ? turned : torch::cat({turned, t.slice(-1, R, D)}, -1);
  };
  q = rot(q);
  k = rot(k);
  auto [kk, vv] = kv.append(l, k, v);  // positions start .. pos + T - 1
  const std::int64_t start = kv.start(l), S = kk.size(2), g = nh / kvh;
  // Grouped-query attention without copying the cache per head: query head h reads KV head h / g,
  // so the g query heads of a KV head are the rows of one product with it.
  auto scores = torch::matmul(q.reshape({B, kvh, g * T, D}), kk.transpose(2, 3)).view({B, nh, T, S}) /
                std::sqrt(static_cast<double>(D));
  const bool window = c.windowed(l) && pos + T > c.sliding_window;
  if (T > 1 || window) {
    // Query i (absolute position pos + i) sees keys j <= i, and with a window only j > i - W.
    auto qpos = torch::arange(pos, pos + T, torch::kInt64).view({T, 1});
    auto kpos = torch::arange(start, start + S, torch::kInt64).view({1, S});
    auto hidden = kpos > qpos;
    if (window) hidden = hidden.logical_or(kpos <= qpos - c.sliding_window);
    scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());
  }
  auto probs = attention_probs(scores, lw).reshape({B, kvh, g * T, S});
  auto out = torch::matmul(probs, vv).view({B, nh, T, D}).transpose(1, 2).reshape({B, T, nh * D});
  x = x + project_out(out, lw);
}

torch::Tensor MoeEngine::Impl::mlp(int decoder_layer, const torch::Tensor& x) {
  const MoeConfig& c = w.config;
  const LayerWeights& lw = w.layers[decoder_layer];
  const std::int64_t N = x.size(0);
  auto m = rms_norm(x, lw.ffn_norm, c.rms_norm_eps).contiguous();
  const int l = c.moe_layer(decoder_layer);  // expert ids, stats and the policy count MoE layers
  if (l < 0) return always_active_mlp(m, lw, c);
  auto [topw, topi] = route(m, lw, c);
  topw = topw.contiguous();
  topi = topi.contiguous();
  if (!forced.empty()) {  // routing replay: row t takes the trace's token forced_rows[t]
    auto* pi = topi.data_ptr<std::int64_t>();
    auto* pw = topw.data_ptr<float>();
    for (std::int64_t t = 0; t < N; ++t) {
      const TraceToken& tok = *forced[forced_rows[static_cast<std::size_t>(t)]];
      const bool has_w = l < static_cast<int>(tok.weights.size()) && tok.weights[l].size() == tok.experts[l].size();
      for (int k = 0; k < c.top_k; ++k) {
        pi[t * c.top_k + k] = tok.experts[l][k];
        pw[t * c.top_k + k] = has_w ? tok.weights[l][k] : 1.f / static_cast<float>(c.top_k);
      }
    }
  }
  const auto* ti = topi.data_ptr<std::int64_t>();
  const auto* tw = topw.data_ptr<float>();
  if (observer) observer(l, static_cast<int>(N), c.top_k, ti, tw, m.data_ptr<float>(), c.hidden_size);

  std::vector<ExpertWork> work;
  {
    std::vector<int> slot(c.num_experts, -1);
    for (std::int64_t t = 0; t < N; ++t)
      for (int k = 0; k < c.top_k; ++k) {
        const int e = static_cast<int>(ti[t * c.top_k + k]);
        if (slot[e] < 0) {
          slot[e] = static_cast<int>(work.size());
          work.push_back(ExpertWork{e, {}, {}});
        }
        work[slot[e]].rows.push_back(t);
        work[slot[e]].gates.push_back(tw[t * c.top_k + k]);
      }
    std::sort(work.begin(), work.end(), [](const auto& a, const auto& b) { return a.expert < b.expert; });
  }
  std::vector<int> experts, counts;
  for (const auto& wk : work) {
    experts.push_back(wk.expert);
    counts.push_back(static_cast<int>(wk.rows.size()));
    ++stats.expert_counts[static_cast<std::size_t>(l) * c.num_experts + wk.expert];
  }
  auto xc = x.contiguous();
  auto out = torch::zeros_like(m);
  // The engine's side of the layer protocol: the ExpertStore's real copies, real compute.
  class EngineLayer : public LayerBackend {
   public:
    EngineLayer(Impl& e, int l, const torch::Tensor& m, const std::vector<ExpertWork>& work, torch::Tensor& out)
        : e_(e), l_(l), m_(m), work_(work), out_(out) {}
    bool contains(ExpertId id) override { return e_.store->contains(id); }
    void pin_hit(ExpertId id) override { e_.store->pin(id); }
    bool load(ExpertId id) override {
      if (!e_.store->request(id)) return false;
      e_.store->pin(id);
      return true;
    }
    void compute(const LayerDispatch& d) override { e_.compute_layer(l_, m_, work_, d, out_); }

   private:
    Impl& e_;  // all of these are moe()'s, alive while the protocol runs the layer
    int l_;
    const torch::Tensor& m_;
    const std::vector<ExpertWork>& work_;
    torch::Tensor& out_;
  } backend(*this, l, m, work, out);
  protocol->run_layer(RouteInfo{l, experts, counts, xc.data_ptr<float>(), static_cast<int>(N), c.hidden_size}, backend);
  if (auto shared = always_active_mlp(m, lw, c); shared.defined()) out = out + shared;
  return out;
}

// Hits first (bytes in place or already on their way), host experts while transfers run, then the
// demand loads, last the experts that found no room (every other expert of this layer is unpinned
// by then); each set in expert order, so the contributions are summed in an order the routing,
// the policy and the budget fix, not the transfers' timing. Runs of hits whose bytes are in place
// are computed as groups (expert_group.h).
void MoeEngine::Impl::compute_layer(int l, const torch::Tensor& m, const std::vector<ExpertWork>& work,
                                    const LayerDispatch& d, torch::Tensor& out) {
  // The biases stay with the dense weights wherever the expert's projections are (weights.h).
  const LayerWeights& lw = w.layers[w.config.decoder_layer(l)];
  const ExpertLayout layout = pool->layout().of_layer(l);
  auto bias = [&](std::size_t i) { return expert_bias(lw, work[i].expert); };
  auto rows_of = [&](std::size_t i) {
    return torch::from_blob(const_cast<std::int64_t*>(work[i].rows.data()),
                            {static_cast<std::int64_t>(work[i].rows.size())}, torch::kInt64);
  };
  // Device experts `group` (work indices, pinned), one group or one call.
  auto device_calls = [&](const std::vector<std::size_t>& group) {
    std::vector<ExpertGroupMember> members;
    for (std::size_t i : group) members.push_back({store->acquire({l, work[i].expert}), &work[i], bias(i)});
    const double t0 = now_s();
    if (group.size() == 1) {
      out.index_add_(0, rows_of(group[0]), run_expert(layout, members[0].base, m, work[group[0]], w.config, members[0].bias));
    } else {
      run_expert_group(layout, members, m, w.config, out);
      stats.grouped_calls += group.size();
    }
    if (profile.device_expert_s > 0) sleep_until_s(t0 + profile.device_expert_s * static_cast<double>(group.size()));
    stats.device_compute_s += now_s() - t0;
    for (std::size_t i : group) store->unpin({l, work[i].expert});
  };
  std::vector<std::size_t> group;  // hits in place, computed together when the next one is not
  std::int64_t group_rows = 0;
  auto flush = [&] {
    if (!group.empty()) device_calls(group);
    group.clear();
    group_rows = 0;
  };
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (d.fate[i] != ExpertFate::kHit) continue;
    const auto n = static_cast<std::int64_t>(work[i].rows.size());
    if (!options.group_experts || !joins_expert_group(layout, n)) {
      flush();
      device_calls({i});
      continue;
    }
    // One on its way starts a new group, so that those before it compute while it lands.
    if (group_rows + n > kExpertGroupRows || !store->resident({l, work[i].expert})) flush();
    group.push_back(i);
    group_rows += n;
  }
  flush();
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (d.fate[i] != ExpertFate::kHost) continue;
    const double t0 = now_s();
    out.index_add_(0, rows_of(i), run_expert(layout, pool->expert({l, work[i].expert}), m, work[i], w.config, bias(i)));
    if (profile.host_token_s > 0) sleep_until_s(t0 + profile.host_token_s * static_cast<double>(work[i].rows.size()));
    stats.host_compute_s += now_s() - t0;
  }
  for (std::size_t i = 0; i < work.size(); ++i)
    if (d.fate[i] == ExpertFate::kLoading) device_calls({i});
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (d.fate[i] != ExpertFate::kNoRoom) continue;
    ExpertId id{l, work[i].expert};  // no room at dispatch: every other expert of this layer is unpinned by now
    FERRY_CHECK(store->request(id), "no evictable expert for a deferred load");
    store->pin(id);
    device_calls({i});
  }
}

torch::Tensor MoeEngine::Impl::embed(const std::vector<std::int64_t>& ids) const {
  const MoeConfig& c = w.config;
  for (auto id : ids) FERRY_REQUIRE(id >= 0 && id < c.vocab_size, "token id ", id, " outside the vocabulary of ", c.vocab_size);
  return w.embed.select_rows(torch::from_blob(const_cast<std::int64_t*>(ids.data()),
                                                  {static_cast<std::int64_t>(ids.size())}, torch::kInt64));
}

std::vector<float> MoeEngine::Impl::run(const std::vector<MoeEngine::SequenceInput>& inputs, bool all_positions) {
  torch::NoGradGuard no_grad;
  const MoeConfig& c = w.config;
  const double t_start = now_s();
  FERRY_REQUIRE(!inputs.empty(), "a step needs at least one sequence");
  std::vector<KvCache*> kvs;
  std::vector<std::int64_t> flat, rows;  // every input's tokens; the rows whose logits are returned
  forced_rows.clear();
  for (const auto& in : inputs) {
    Sequence& seq = sequence(in.sequence);
    FERRY_REQUIRE(std::find(kvs.begin(), kvs.end(), &seq.kv) == kvs.end(), "step: sequence ", in.sequence,
                  " given twice");
    FERRY_REQUIRE(!in.tokens.empty(), "step: sequence ", in.sequence, " without tokens");
    kvs.push_back(&seq.kv);
    for (std::size_t i = 0; i < in.tokens.size(); ++i) {
      if (all_positions || i + 1 == in.tokens.size()) rows.push_back(static_cast<std::int64_t>(flat.size()));
      flat.push_back(in.tokens[i]);
      if (!forced.empty())
        forced_rows.push_back((seq.routing_offset + static_cast<std::size_t>(seq.kv.pos()) + i) % forced.size());
    }
  }
  auto x = embed(flat);  // [N, H]: the inputs' tokens one after the other; checks the ids
  for (std::size_t i = 0; i < inputs.size(); ++i) kvs[i]->reserve(static_cast<std::int64_t>(inputs[i].tokens.size()));
  const std::int64_t H = c.hidden_size, N = static_cast<std::int64_t>(flat.size());
  for (int l = 0; l < c.num_layers; ++l) {
    // Attention per sequence (its own cache and position), the MLP over every token at once.
    std::vector<torch::Tensor> parts;
    std::int64_t at = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto T = static_cast<std::int64_t>(inputs[i].tokens.size());
      auto xi = x.slice(0, at, at + T).view({1, T, H});
      const double t_att = now_s();
      attention(l, xi, *kvs[i]);
      stats.attention_s += now_s() - t_att;
      parts.push_back(xi.view({T, H}));
      at += T;
    }
    x = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
    const double t_moe = now_s();
    x = x + mlp(l, x);
    stats.moe_s += now_s() - t_moe;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) kvs[i]->advance(static_cast<std::int64_t>(inputs[i].tokens.size()));
  const double t_head = now_s();
  auto h = rms_norm(x.index_select(0, torch::from_blob(rows.data(), {static_cast<std::int64_t>(rows.size())},
                                                        torch::kInt64)),
                    w.final_norm, c.rms_norm_eps);
  auto out = project(h, w.lm_head).contiguous();
  stats.head_s += now_s() - t_head;
  protocol->step_done();
  ++stats.forwards;
  stats.tokens += static_cast<std::uint64_t>(N);
  stats.forward_s += now_s() - t_start;
  return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

std::vector<float> MoeEngine::step(const std::vector<SequenceInput>& inputs) { return impl_->run(inputs, false); }

std::vector<float> MoeEngine::forward(const TokenBatch& tokens, bool all_positions) {
  Impl& m = *impl_;
  FERRY_REQUIRE(!tokens.empty() && !tokens[0].empty(), "forward needs at least one token");
  const std::size_t B = tokens.size(), T = tokens[0].size();
  for (const auto& row : tokens)
    FERRY_REQUIRE(row.size() == T, "every row of a batch must have the same length");
  if (!m.lockstep.empty() && B != m.lockstep.size() && m.sequence(m.lockstep[0]).kv.pos() == 0) reset();
  if (m.lockstep.empty()) {
    for (std::size_t j = 0; j < B; ++j)  // row j walks a replayed trace from token floor(j N / B)
      m.lockstep.push_back(open_sequence({0, j * m.forced.size() / B}));
  }
  FERRY_REQUIRE(B == m.lockstep.size(), "batch size changed from ", m.lockstep.size(), " to ", B,
                " without reset()");
  std::vector<SequenceInput> inputs;
  for (std::size_t j = 0; j < B; ++j) inputs.push_back({m.lockstep[j], tokens[j]});
  return m.run(inputs, all_positions);
}

}  // namespace ferry::moe
