#include "moe/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <sstream>

#include <torch/torch.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "moe/model/decoder_ops.h"
#include "moe/model/weights.h"
#include "moe/sched/layer_protocol.h"

namespace ferry::moe {

ComputeProfile parse_compute_profile(const std::string& text) {
  ComputeProfile p;
  p.name = text;
  if (text == "none" || text.empty()) return p;
  if (text == "a100") {
    // 100 us: the emulated device's expert call, a scale (a tiny model's expert is not Mixtral's);
    // the host is as many times slower per token as on the A100 deployment (core/hardware.h).
    p.device_expert_s = 100e-6;
    p.host_token_s = p.device_expert_s * hardware::kA100HostRatio;
    return p;
  }
  auto comma = text.find(',');
  if (comma == std::string::npos)
    FERRY_THROW(InvalidArgument, "invalid --compute '", text, "': expected none, a100 or DEVICE,HOST_PER_TOKEN (100us,1ms)");
  p.device_expert_s = parse_duration_s(text.substr(0, comma));
  p.host_token_s = parse_duration_s(text.substr(comma + 1));
  return p;
}

std::uint64_t parse_device_mem(const std::string& text, std::uint64_t total_expert_bytes) {
  if (!text.empty() && text.back() == '%') {
    double pct = 0;
    try {
      std::size_t used = 0;
      pct = std::stod(text.substr(0, text.size() - 1), &used);
      if (used != text.size() - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      FERRY_THROW(InvalidArgument, "invalid --device-mem '", text, "': expected a percentage such as 30%");
    }
    FERRY_REQUIRE(pct > 0 && pct <= 100, "invalid --device-mem '", text, "': percentage must be in (0, 100]");
    return static_cast<std::uint64_t>(std::llround(pct / 100.0 * static_cast<double>(total_expert_bytes)));
  }
  return parse_bytes(text);
}

namespace {

// Accumulates steady-clock time into *total while alive.
class ScopedTimer {
 public:
  explicit ScopedTimer(double* total) : total_(total), t0_(now_s()) {}
  ~ScopedTimer() { *total_ += now_s() - t0_; }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  double* total_;
  double t0_;
};

// The predictor a policy was given, timed (the engine's per-token overhead report).
class TimedPredictor : public Predictor {
 public:
  TimedPredictor(std::unique_ptr<Predictor> inner, double* total) : inner_(std::move(inner)), total_(total) {}
  std::string name() const override { return inner_->name(); }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override {
    ScopedTimer t(total_);
    inner_->predict(in, lookahead, out);
  }
  void observe(int layer, std::span<const int> experts, std::span<const float> weights) override {
    ScopedTimer t(total_);
    inner_->observe(layer, experts, weights);
  }
  void reset_sequence() override { inner_->reset_sequence(); }
  bool sees_past_token() const override { return inner_->sees_past_token(); }

 private:
  std::unique_ptr<Predictor> inner_;
  double* total_;
};

// The policy's victim choices, timed (they run inside the store's demand loads).
class TimedAdvisor : public EvictionAdvisor {
 public:
  TimedAdvisor(EvictionAdvisor* inner, double* total) : inner_(inner), total_(total) {}
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override {
    ScopedTimer t(total_);
    return inner_->choose_victim(candidates, incoming);
  }

 private:
  EvictionAdvisor* inner_;
  double* total_;
};

// Tokens routed to one expert in one layer.
struct ExpertWork {
  int expert = 0;
  std::vector<std::int64_t> rows;
  std::vector<float> gates;
};

// The keys and values of B sequences at one position: per layer [B, kv, cap, D]. Layer l holds
// positions start[l] .. pos - 1 at cache indices 0 ..; a windowed layer drops the keys no later
// query can see, so it holds at most W - 1 + T positions; every other layer starts at 0.
struct KvCache {
  std::vector<torch::Tensor> k, v;
  std::vector<std::int64_t> start;
  std::int64_t pos = 0;
  explicit KvCache(int layers) : k(layers), v(layers), start(layers, 0) {}
  std::int64_t cached_positions() const {
    std::int64_t n = 0;
    for (std::size_t l = 0; l < k.size(); ++l)
      if (k[l].defined()) n += pos - start[l];
    return n;
  }
};

}  // namespace

struct MoeEngine::Impl {
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
  torch::Tensor rope_cos, rope_sin;           // [max_pos, D]
  KvCache lockstep{0};                         // forward()'s batch of `batch` rows
  std::int64_t batch = 0;
  std::map<int, KvCache> sequences;            // step()'s sequences, one row each
  int next_sequence = 0;
  // The first position layer l of `kv` must keep before a forward of more tokens.
  std::int64_t keep_from(const KvCache& kv, int l) const {
    return w.config.windowed(l) ? std::max<std::int64_t>(kv.start[l], kv.pos - w.config.sliding_window + 1)
                                : kv.start[l];
  }
  EngineStats stats;
  RouteObserver observer;
  std::unique_ptr<TimedAdvisor> advisor;
  std::vector<const TraceToken*> forced;  // routing replay: the trace's decode tokens, in order

  // Self-attention of layer l over x [B, T, H] (residual added) against the cache's positions.
  void attention(int l, torch::Tensor& x, KvCache& kv);
  std::unique_ptr<LayerProtocol> protocol;  // over `policy`, timed into stats.policy_s
  // Decoder layer l's MLP on x [N, H]: its routed experts through the offloading protocol plus
  // the shared expert, or its dense MLP.
  torch::Tensor mlp(int l, const torch::Tensor& x);
  // x [N, H] -> logits [N, V]; then the per-step bookkeeping of forward() and step().
  std::vector<float> logits(const torch::Tensor& x);
  torch::Tensor embed(const std::vector<std::int64_t>& ids) const;
  void compute_layer(int l, const torch::Tensor& m, const std::vector<ExpertWork>& work, const LayerDispatch& d,
                     torch::Tensor& out);
  torch::Tensor run_expert(const float* base, const torch::Tensor& m, const ExpertWork& work) const;
  // Room in every layer of `kv` for T more positions of B rows.
  void ensure_cache(KvCache& kv, std::int64_t B, std::int64_t T);
};

MoeEngine::MoeEngine() : impl_(std::make_unique<Impl>()) {}
MoeEngine::~MoeEngine() {
  if (impl_ && impl_->store) impl_->store.reset();  // joins the I/O thread before the pool goes
}

std::unique_ptr<MoeEngine> MoeEngine::open(const std::string& model_dir, const EngineOptions& options) {
  register_builtin_links();
  register_builtin_policies();
  std::unique_ptr<MoeEngine> eng(new MoeEngine());
  Impl& m = *eng->impl_;
  m.options = options;
  m.profile = parse_compute_profile(options.compute);
  // The predictor the policy is given (prescope; next-gate on the model's routers unless the caller
  // chose one) is timed into stats.predictor_s. Policies that do not take one ignore the factory.
  PolicyOptions po = options.policy_options;
  {
    double* total = &m.stats.predictor_s;
    po.wrap_predictor = [total](std::unique_ptr<Predictor> p) -> std::unique_ptr<Predictor> {
      return std::make_unique<TimedPredictor>(std::move(p), total);
    };
  }
  m.policy = make_policy(options.policy, po);  // early: a bad spec fails before loading
  m.ck = Checkpoint::open(model_dir);
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
  m.w = load_dense_weights(*m.ck);
  // A link that reads the checkpoint itself (file) leaves no host copy: the experts stream from
  // disk into the device budget (the whole point when they do not fit in memory), and none can
  // run on the host, whatever the policy would choose.
  const bool from_disk = !link_entry(parse_link_spec(options.link).kind).keeps_host_copy;
  m.pool = HostPool::load(*m.ck, !from_disk);
  const std::uint64_t eb = m.pool->layout().bytes();
  m.budget = parse_device_mem(options.device_mem, m.pool->total_bytes());
  const std::uint64_t need = static_cast<std::uint64_t>(c.top_k) * eb;
  if (m.budget < need)
    FERRY_THROW(InvalidArgument, "--device-mem ", options.device_mem, " (", format_bytes(static_cast<double>(m.budget)),
                ") is smaller than one layer's active experts: top_k ", c.top_k, " x ",
                format_bytes(static_cast<double>(eb)), " = ", format_bytes(static_cast<double>(need)));

  // Batch-1 compute time of one expert on this CPU: the cost model when no profile is given.
  double measured = 0;
  {
    torch::NoGradGuard ng;
    auto x = torch::randn({1, c.hidden_size});
    auto weights = torch::randn({m.pool->layout().floats()});  // an expert's shape: the cost, not the values
    ExpertWork work{0, {0}, {1.f}};
    std::vector<double> t;
    for (int i = 0; i < 15; ++i) {
      double t0 = now_s();
      m.run_expert(weights.data_ptr<float>(), x, work);
      t.push_back(now_s() - t0);
    }
    std::sort(t.begin(), t.end());
    measured = t[t.size() / 2];
  }
  m.cost.device_expert_s = m.profile.device_expert_s > 0 ? m.profile.device_expert_s : measured;
  m.cost.host_token_s = m.profile.host_token_s > 0 ? m.profile.host_token_s : measured;
  m.cost.host_available = !from_disk;

  LinkSpec spec = resolve_scaled_link(options.link, eb, m.cost.device_expert_s);
  spec.chunk_bytes = options.chunk_bytes;
  auto link = make_link(spec, LinkSource{m.pool.get(), m.ck.get()});
  m.cost.transfer_s = link->estimate_s(eb);
  m.store = std::make_unique<ExpertStore>(m.pool.get(), std::move(link), ExpertStoreOptions{m.budget});
  m.advisor = std::make_unique<TimedAdvisor>(m.policy.get(), &m.stats.policy_s);
  m.store->set_advisor(m.advisor.get());

  m.routers = router_view(m.w);
  if (options.preload) {
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
  m.rope_cos = emb.cos().to(torch::kFloat32);
  m.rope_sin = emb.sin().to(torch::kFloat32);
  m.stats.expert_counts.assign(static_cast<std::size_t>(c.num_moe_layers()) * c.num_experts, 0);
  m.stats.budget_bytes = m.budget;
  eng->reset();
  m.store->reset_stats();
  return eng;
}

void MoeEngine::reset() {
  impl_->lockstep = KvCache(impl_->w.config.num_layers);
  impl_->batch = 0;
}

int MoeEngine::open_sequence() {
  const int id = impl_->next_sequence++;
  impl_->sequences.emplace(id, KvCache(impl_->w.config.num_layers));
  return id;
}

void MoeEngine::close_sequence(int sequence) {
  FERRY_REQUIRE(impl_->sequences.erase(sequence) == 1, "close_sequence: unknown sequence ", sequence);
}

std::int64_t MoeEngine::sequence_position(int sequence) const {
  auto it = impl_->sequences.find(sequence);
  FERRY_REQUIRE(it != impl_->sequences.end(), "unknown sequence ", sequence);
  return it->second.pos;
}

const MoeConfig& MoeEngine::config() const { return impl_->w.config; }
std::uint64_t MoeEngine::expert_bytes() const { return impl_->pool->layout().bytes(); }
std::uint64_t MoeEngine::total_expert_bytes() const { return impl_->pool->total_bytes(); }
std::int64_t MoeEngine::kv_cached_positions() const {
  std::int64_t n = impl_->lockstep.cached_positions();
  for (const auto& [id, kv] : impl_->sequences) n += kv.cached_positions();
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
  s << "policy " << m.policy->name() << ", device budget " << format_bytes(static_cast<double>(m.budget)) << " ("
    << m.budget / m.pool->layout().bytes() << " of " << m.pool->num_layers() * m.pool->num_experts()
    << " experts), link " << m.store->link().describe() << ", compute " << m.profile.name << " (device expert "
    << format_duration(m.cost.device_expert_s) << ", host "
    << (m.cost.host_available ? format_duration(m.cost.host_token_s) + "/token" : std::string("none: no host copy"))
    << "), transfer/compute " << (m.cost.device_expert_s > 0 ? m.cost.transfer_s / m.cost.device_expert_s : 0)
    << "x";
  return s.str();
}

void MoeEngine::Impl::ensure_cache(KvCache& kv, std::int64_t B, std::int64_t T) {
  const MoeConfig& c = w.config;
  for (int l = 0; l < c.num_layers; ++l) {
    auto &k_cache = kv.k, &v_cache = kv.v;
    const std::int64_t need = kv.pos - keep_from(kv, l) + T;
    std::int64_t cap = k_cache[l].defined() ? k_cache[l].size(2) : 0;
    if (cap >= need) continue;
    std::int64_t ncap = std::max<std::int64_t>(need, std::max<std::int64_t>(64, cap * 2));
    ncap = std::min<std::int64_t>(ncap, c.max_position_embeddings);
    auto nk = torch::zeros({B, c.num_kv_heads, ncap, c.head_dim});
    auto nv = torch::zeros({B, c.num_kv_heads, ncap, c.head_dim});
    if (cap > 0) {
      nk.slice(2, 0, cap).copy_(k_cache[l]);
      nv.slice(2, 0, cap).copy_(v_cache[l]);
    }
    k_cache[l] = nk;
    v_cache[l] = nv;
  }
}

void MoeEngine::Impl::attention(int l, torch::Tensor& x, KvCache& kv) {
  const MoeConfig& c = w.config;
  const std::int64_t B = x.size(0), T = x.size(1), pos = kv.pos;
  auto &k_cache = kv.k, &v_cache = kv.v;
  const LayerWeights& lw = w.layers[l];
  const std::int64_t D = c.head_dim, nh = c.num_heads, kvh = c.num_kv_heads;
  auto [q, k, v] = project_qkv(rms_norm(x, lw.attn_norm, c.rms_norm_eps), lw, c);
  auto cos = rope_cos.slice(0, pos, pos + T), sin = rope_sin.slice(0, pos, pos + T);
  auto rot = [&](const torch::Tensor& t) {
    auto t1 = t.slice(-1, 0, D / 2), t2 = t.slice(-1, D / 2, D);
    return t * cos + torch::cat({-t2, t1}, -1) * sin;
  };
  q = rot(q);
  k = rot(k);
  std::int64_t& start = kv.start[l];
  if (const std::int64_t from = keep_from(kv, l); from > start) {  // slide the window's keys to index 0
    const std::int64_t n = pos - from;
    k_cache[l].slice(2, 0, n).copy_(k_cache[l].slice(2, from - start, pos - start).clone());
    v_cache[l].slice(2, 0, n).copy_(v_cache[l].slice(2, from - start, pos - start).clone());
    start = from;
  }
  const std::int64_t at = pos - start;  // the cache index of position pos
  k_cache[l].slice(2, at, at + T).copy_(k);
  v_cache[l].slice(2, at, at + T).copy_(v);
  const std::int64_t S = at + T;  // cached positions start .. pos + T - 1
  auto kk = k_cache[l].slice(2, 0, S), vv = v_cache[l].slice(2, 0, S);
  if (nh != kvh) {
    kk = kk.repeat_interleave(nh / kvh, 1);
    vv = vv.repeat_interleave(nh / kvh, 1);
  }
  auto scores = torch::matmul(q, kk.transpose(2, 3)) / std::sqrt(static_cast<double>(D));
  const bool window = c.windowed(l) && pos + T > c.sliding_window;
  if (T > 1 || window) {
    // Query i (absolute position pos + i) sees keys j <= i, and with a window only j > i - W.
    auto qpos = torch::arange(pos, pos + T, torch::kInt64).view({T, 1});
    auto kpos = torch::arange(start, start + S, torch::kInt64).view({1, S});
    auto hidden = kpos > qpos;
    if (window) hidden = hidden.logical_or(kpos <= qpos - c.sliding_window);
    scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());
  }
  auto out = torch::matmul(torch::softmax(scores, -1), vv).transpose(1, 2).reshape({B, T, nh * D});
  x = x + project_out(out, lw);
}

torch::Tensor MoeEngine::Impl::run_expert(const float* base, const torch::Tensor& m, const ExpertWork& work) const {
  const auto& L = pool->layout();
  float* p = const_cast<float*>(base);  // from_blob wants non-const; the views are only read
  auto w1 = torch::from_blob(p + L.w1_offset(), {L.intermediate, L.hidden});
  auto w3 = torch::from_blob(p + L.w3_offset(), {L.intermediate, L.hidden});
  auto w2 = torch::from_blob(p + L.w2_offset(), {L.hidden, L.intermediate});
  const auto n = static_cast<std::int64_t>(work.rows.size());
  auto idx = torch::from_blob(const_cast<std::int64_t*>(work.rows.data()), {n}, torch::kInt64);
  auto gate = torch::from_blob(const_cast<float*>(work.gates.data()), {n, 1});
  return gated_mlp(m.index_select(0, idx), w1, w3, w2, w.config.hidden_act) * gate;
}

torch::Tensor MoeEngine::Impl::mlp(int decoder_layer, const torch::Tensor& x) {
  const MoeConfig& c = w.config;
  const LayerWeights& lw = w.layers[decoder_layer];
  const std::int64_t N = x.size(0);
  auto m = rms_norm(x, lw.ffn_norm, c.rms_norm_eps).contiguous();
  const int l = c.moe_layer(decoder_layer);  // expert ids, stats and the policy count MoE layers
  if (l < 0) return always_active_mlp(m, lw, c);
  auto [topw, topi] = route(m, lw.router, c);
  topw = topw.contiguous();
  topi = topi.contiguous();
  if (!forced.empty()) {  // routing replay: sequence j at position p takes stream token (floor(j N / B) + p) mod N
    const std::size_t Ntr = forced.size();
    const std::int64_t T = N / batch;
    auto* pi = topi.data_ptr<std::int64_t>();
    auto* pw = topw.data_ptr<float>();
    for (std::int64_t t = 0; t < N; ++t) {
      const std::int64_t j = t / T, p = lockstep.pos + t % T;
      const TraceToken& tok = *forced[(static_cast<std::size_t>(j) * Ntr / static_cast<std::size_t>(batch) +
                                       static_cast<std::size_t>(p)) % Ntr];
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

// Bytes already in place first, host experts while transfers run, then in load order; last the
// experts that found no room (every other expert of this layer is unpinned by then).
void MoeEngine::Impl::compute_layer(int l, const torch::Tensor& m, const std::vector<ExpertWork>& work,
                                    const LayerDispatch& d, torch::Tensor& out) {
  auto device_call = [&](std::size_t i) {
    ExpertId id{l, work[i].expert};
    const float* p = store->acquire(id);
    const double t0 = now_s();
    out.index_add_(0, torch::from_blob(const_cast<std::int64_t*>(work[i].rows.data()),
                                       {static_cast<std::int64_t>(work[i].rows.size())}, torch::kInt64),
                   run_expert(p, m, work[i]));
    if (profile.device_expert_s > 0) sleep_until_s(t0 + profile.device_expert_s);
    stats.device_compute_s += now_s() - t0;
    store->unpin(id);
  };
  std::vector<char> done(work.size(), 0);
  for (std::size_t i = 0; i < work.size(); ++i)
    if (d.fate[i] == ExpertFate::kHit || (d.fate[i] == ExpertFate::kLoading && store->resident({l, work[i].expert}))) {
      device_call(i);
      done[i] = 1;
    }
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (d.fate[i] != ExpertFate::kHost) continue;
    const double t0 = now_s();
    out.index_add_(0, torch::from_blob(const_cast<std::int64_t*>(work[i].rows.data()),
                                       {static_cast<std::int64_t>(work[i].rows.size())}, torch::kInt64),
                   run_expert(pool->expert({l, work[i].expert}), m, work[i]));
    if (profile.host_token_s > 0) sleep_until_s(t0 + profile.host_token_s * static_cast<double>(work[i].rows.size()));
    stats.host_compute_s += now_s() - t0;
    done[i] = 1;
  }
  for (std::size_t i = 0; i < work.size(); ++i)
    if (!done[i] && d.fate[i] == ExpertFate::kLoading) {
      device_call(i);
      done[i] = 1;
    }
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (done[i]) continue;
    ExpertId id{l, work[i].expert};  // no room at dispatch: every other expert of this layer is unpinned by now
    FERRY_CHECK(store->request(id), "no evictable expert for a deferred load");
    store->pin(id);
    device_call(i);
  }
}

torch::Tensor MoeEngine::Impl::embed(const std::vector<std::int64_t>& ids) const {
  const MoeConfig& c = w.config;
  for (auto id : ids) FERRY_REQUIRE(id >= 0 && id < c.vocab_size, "token id ", id, " outside the vocabulary of ", c.vocab_size);
  return w.embed.index_select(0, torch::from_blob(const_cast<std::int64_t*>(ids.data()),
                                                  {static_cast<std::int64_t>(ids.size())}, torch::kInt64));
}

std::vector<float> MoeEngine::Impl::logits(const torch::Tensor& x) {
  auto h = rms_norm(x, w.final_norm, w.config.rms_norm_eps);
  auto out = torch::matmul(h, w.lm_head.t()).contiguous();
  protocol->step_done();
  ++stats.forwards;
  return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

std::vector<float> MoeEngine::forward(const TokenBatch& tokens, bool all_positions) {
  torch::NoGradGuard no_grad;
  Impl& m = *impl_;
  const MoeConfig& c = m.w.config;
  const double t_start = now_s();
  FERRY_REQUIRE(!tokens.empty() && !tokens[0].empty(), "forward needs at least one token");
  const std::int64_t B = static_cast<std::int64_t>(tokens.size()), T = static_cast<std::int64_t>(tokens[0].size());
  KvCache& kv = m.lockstep;
  if (kv.pos > 0)
    FERRY_REQUIRE(B == m.batch, "batch size changed from ", m.batch, " to ", B, " without reset()");
  std::vector<std::int64_t> flat;
  flat.reserve(static_cast<std::size_t>(B * T));
  for (const auto& row : tokens) {
    FERRY_REQUIRE(static_cast<std::int64_t>(row.size()) == T, "every row of a batch must have the same length");
    flat.insert(flat.end(), row.begin(), row.end());
  }
  FERRY_REQUIRE(kv.pos + T <= c.max_position_embeddings, "sequence longer than max_position_embeddings (",
                c.max_position_embeddings, ")");
  const std::int64_t H = c.hidden_size;
  auto x = m.embed(flat).view({B, T, H});
  m.batch = B;
  m.ensure_cache(kv, B, T);
  for (int l = 0; l < c.num_layers; ++l) {
    m.attention(l, x, kv);
    x = x + m.mlp(l, x.reshape({B * T, H})).view({B, T, H});
  }
  kv.pos += T;
  auto out = m.logits(all_positions ? x : x.slice(1, T - 1, T));
  m.stats.tokens += static_cast<std::uint64_t>(B * T);
  m.stats.forward_s += now_s() - t_start;
  return out;
}

std::vector<float> MoeEngine::step(const std::vector<SequenceInput>& inputs) {
  torch::NoGradGuard no_grad;
  Impl& m = *impl_;
  const MoeConfig& c = m.w.config;
  const double t_start = now_s();
  FERRY_REQUIRE(!inputs.empty(), "step needs at least one sequence");
  FERRY_REQUIRE(m.forced.empty(), "routing replay (forced_routing) drives forward()'s lock-step batch, not step()");
  std::vector<KvCache*> kvs;
  std::vector<std::int64_t> flat, last;  // every input's tokens; the row of each input's last token
  for (const auto& in : inputs) {
    auto it = m.sequences.find(in.sequence);
    FERRY_REQUIRE(it != m.sequences.end(), "step: unknown sequence ", in.sequence);
    FERRY_REQUIRE(std::find(kvs.begin(), kvs.end(), &it->second) == kvs.end(), "step: sequence ", in.sequence,
                  " given twice");
    FERRY_REQUIRE(!in.tokens.empty(), "step: sequence ", in.sequence, " without tokens");
    FERRY_REQUIRE(it->second.pos + static_cast<std::int64_t>(in.tokens.size()) <= c.max_position_embeddings,
                  "sequence longer than max_position_embeddings (", c.max_position_embeddings, ")");
    kvs.push_back(&it->second);
    flat.insert(flat.end(), in.tokens.begin(), in.tokens.end());
    last.push_back(static_cast<std::int64_t>(flat.size()) - 1);
  }
  const std::int64_t H = c.hidden_size, N = static_cast<std::int64_t>(flat.size());
  auto x = m.embed(flat);  // [N, H]: the inputs' tokens one after the other
  for (std::size_t i = 0; i < inputs.size(); ++i) m.ensure_cache(*kvs[i], 1, static_cast<std::int64_t>(inputs[i].tokens.size()));
  for (int l = 0; l < c.num_layers; ++l) {
    // Attention per sequence (its own cache and position), the MLP over every token at once.
    std::vector<torch::Tensor> parts;
    std::int64_t at = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto T = static_cast<std::int64_t>(inputs[i].tokens.size());
      auto xi = x.slice(0, at, at + T).view({1, T, H});
      m.attention(l, xi, *kvs[i]);
      parts.push_back(xi.view({T, H}));
      at += T;
    }
    x = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
    x = x + m.mlp(l, x);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) kvs[i]->pos += static_cast<std::int64_t>(inputs[i].tokens.size());
  auto out = m.logits(x.index_select(0, torch::from_blob(last.data(), {static_cast<std::int64_t>(last.size())}, torch::kInt64)));
  m.stats.tokens += static_cast<std::uint64_t>(N);
  m.stats.forward_s += now_s() - t_start;
  return out;
}

}  // namespace ferry::moe
