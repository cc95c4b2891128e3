#include "moe/predict/llapor_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/metrics.h"
#include "moe/model/safetensors.h"

namespace ferry::moe {
namespace {

namespace fs = std::filesystem;

float gelu(float x) { return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f)); }
float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

void add_dense(SafetensorsWriter& w, const std::string& name, const LlaporDense& d) {
  w.add_f32(name + ".weight", DType::kF32, {d.out, d.in}, d.weight.data());
  w.add_f32(name + ".bias", DType::kF32, {d.out}, d.bias.data());
}

std::vector<float> read_f32(const SafetensorsFile& f, const std::string& name, std::vector<std::int64_t> shape) {
  const TensorInfo& t = f.at(name);
  if (t.dtype != DType::kF32 || t.shape != shape)
    FERRY_THROW(FormatError, "'", f.path(), "': tensor '", name, "' is ", shape_string(t.shape), ", expected F32 ",
                shape_string(shape));
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  std::memcpy(v.data(), f.data(t), v.size() * sizeof(float));
  for (float x : v)
    if (!std::isfinite(x)) FERRY_THROW(FormatError, "'", f.path(), "': tensor '", name, "' holds a non-finite value");
  return v;
}

LlaporDense read_dense(const SafetensorsFile& f, const std::string& name, int in, int out) {
  LlaporDense d;
  d.in = in;
  d.out = out;
  d.weight = read_f32(f, name + ".weight", {out, in});
  d.bias = read_f32(f, name + ".bias", {out});
  return d;
}

template <typename T>
T get(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.contains(key)) FERRY_THROW(FormatError, "'", path, "': missing '", key, "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    FERRY_THROW(FormatError, "'", path, "': '", key, "' has the wrong type");
  }
}

}  // namespace

const char* llapor_mode_name(LlaporMode m) { return m == LlaporMode::kHidden ? "hidden" : "history"; }

void LlaporDense::apply(const float* x, float* y) const {
  for (int o = 0; o < out; ++o) {
    const float* w = weight.data() + static_cast<std::size_t>(o) * in;
    float acc = bias[o];
    for (int i = 0; i < in; ++i) acc += w[i] * x[i];
    y[o] = acc;
  }
}

void routing_to_weights(const std::vector<std::vector<int>>& experts, const std::vector<std::vector<float>>& weights,
                        int num_experts, std::vector<float>& out) {
  out.assign(experts.size() * num_experts, 0.f);
  for (std::size_t l = 0; l < experts.size(); ++l) {
    const auto& ex = experts[l];
    const bool have = l < weights.size() && weights[l].size() == ex.size();
    for (std::size_t k = 0; k < ex.size(); ++k)
      if (ex[k] >= 0 && ex[k] < num_experts)
        out[l * num_experts + ex[k]] = have ? weights[l][k] : 1.f / static_cast<float>(ex.size());
  }
}

int LlaporModel::feature_dims() const {
  const auto& s = shape;
  if (s.mode == LlaporMode::kHidden) return s.pca_dims + (s.routing_features ? s.num_experts : 0);
  return s.context_layers * s.num_experts + s.previous_tokens * (s.lookahead + 1) * s.num_experts + s.num_layers;
}

void LlaporModel::hidden_features(int layer, const float* x, const float* gate_weights, float* out) const {
  pca[layer].project(x, out);
  if (!shape.routing_features) return;
  float* w = out + shape.pca_dims;
  if (gate_weights) std::memcpy(w, gate_weights, sizeof(float) * shape.num_experts);
  else std::fill(w, w + shape.num_experts, 0.f);
}

void LlaporModel::history_features(int layer, const float* current, const std::vector<const float*>& previous,
                                   float* out) const {
  const int E = shape.num_experts, L = shape.num_layers;
  float* o = out;
  for (int c = 0; c < shape.context_layers; ++c, o += E) {
    const int l = layer - c;
    if (l >= 0) std::memcpy(o, current + static_cast<std::size_t>(l) * E, sizeof(float) * E);
    else std::fill(o, o + E, 0.f);
  }
  for (int h = 0; h < shape.previous_tokens; ++h)
    for (int d = 0; d <= shape.lookahead; ++d, o += E) {
      const int l = layer + d;
      const float* p = h < static_cast<int>(previous.size()) ? previous[h] : nullptr;
      if (p && l < L) std::memcpy(o, p + static_cast<std::size_t>(l) * E, sizeof(float) * E);
      else std::fill(o, o + E, 0.f);
    }
  std::fill(o, o + L, 0.f);
  o[layer] = 1.f;
}

void LlaporModel::forward(int layer, const float* features, float* probs) const {
  const LlaporNet& n = nets.at(net_of_layer.at(layer));
  std::vector<float> h(n.in.out), r, g;
  n.in.apply(features, h.data());
  for (float& v : h) v = gelu(v);
  if (n.gated) {
    r.resize(n.res.out);
    g.resize(n.gate.out);
    n.res.apply(h.data(), r.data());
    n.gate.apply(h.data(), g.data());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += gelu(r[i]) * sigmoid(g[i]);
  }
  n.out.apply(h.data(), probs);
  for (int i = 0; i < n.out.out; ++i) probs[i] = sigmoid(probs[i]);
}

void LlaporModel::save(const std::string& dir) const {
  make_dirs(dir);
  SafetensorsWriter w;
  for (int l = 0; l < static_cast<int>(pca.size()); ++l) {
    const Pca& p = pca[l];
    if (p.out_dim == 0) continue;
    const std::string n = "pca." + std::to_string(l);
    w.add_f32(n + ".mean", DType::kF32, {p.in_dim}, p.mean.data());
    w.add_f32(n + ".components", DType::kF32, {p.out_dim, p.in_dim}, p.components.data());
    w.add_f32(n + ".variance", DType::kF32, {p.out_dim}, p.variance.data());
  }
  nlohmann::json layers = nlohmann::json::array();
  for (int l = 0; l < shape.num_layers; ++l) {
    const int i = net_of_layer[l];
    layers.push_back({{"net", i}, {"gated", i >= 0 && nets[i].gated}});
  }
  for (std::size_t i = 0; i < nets.size(); ++i) {
    const std::string n = "net." + std::to_string(i);
    add_dense(w, n + ".in", nets[i].in);
    if (nets[i].gated) {
      add_dense(w, n + ".res", nets[i].res);
      add_dense(w, n + ".gate", nets[i].gate);
    }
    add_dense(w, n + ".out", nets[i].out);
  }
  w.write((fs::path(dir) / "llapor.safetensors").string());
  const auto& s = shape;
  nlohmann::json j = {{"format", "ferry-llapor"}, {"version", 1},
                      {"mode", llapor_mode_name(s.mode)}, {"num_layers", s.num_layers},
                      {"num_experts", s.num_experts},     {"top_k", s.top_k},
                      {"lookahead", s.lookahead},         {"hidden_size", s.hidden_size},
                      {"pca_dims", s.pca_dims},           {"routing_features", s.routing_features},
                      {"context_layers", s.context_layers},
                      {"previous_tokens", s.previous_tokens}, {"width", s.width},
                      {"num_nets", nets.size()},          {"layers", layers},
                      {"report", report}};
  write_json_file((fs::path(dir) / "llapor.json").string(), j);
}

LlaporModel LlaporModel::load(const std::string& dir) {
  const std::string jpath = (fs::path(dir) / "llapor.json").string();
  const std::string wpath = (fs::path(dir) / "llapor.safetensors").string();
  std::ifstream in(jpath);
  if (!in) FERRY_THROW(IoError, "cannot open LLaPor predictor '", jpath, "' (write one with ferry moe fit-predictor)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "'", jpath, "' is not valid JSON: ", e.what());
  }
  if (!j.is_object() || j.value("format", std::string()) != "ferry-llapor")
    FERRY_THROW(FormatError, "'", jpath, "' is not a LLaPor predictor (format must be 'ferry-llapor')");
  if (get<int>(j, "version", jpath) != 1)
    FERRY_THROW(FormatError, "'", jpath, "': unsupported version ", j["version"].dump());
  LlaporModel m;
  auto& s = m.shape;
  const auto mode = get<std::string>(j, "mode", jpath);
  if (mode != "hidden" && mode != "history")
    FERRY_THROW(FormatError, "'", jpath, "': mode '", mode, "' is neither 'hidden' nor 'history'");
  s.mode = mode == "hidden" ? LlaporMode::kHidden : LlaporMode::kHistory;
  s.num_layers = get<int>(j, "num_layers", jpath);
  s.num_experts = get<int>(j, "num_experts", jpath);
  s.top_k = get<int>(j, "top_k", jpath);
  s.lookahead = get<int>(j, "lookahead", jpath);
  s.hidden_size = get<int>(j, "hidden_size", jpath);
  s.pca_dims = get<int>(j, "pca_dims", jpath);
  s.routing_features = j.contains("routing_features") && get<bool>(j, "routing_features", jpath);
  s.context_layers = get<int>(j, "context_layers", jpath);
  s.previous_tokens = get<int>(j, "previous_tokens", jpath);
  s.width = get<int>(j, "width", jpath);
  const int num_nets = get<int>(j, "num_nets", jpath);
  auto bad = [&](const char* what) { FERRY_THROW(FormatError, "'", jpath, "': invalid ", what); };
  if (s.num_layers < 2 || s.num_layers > 4096) bad("num_layers");
  if (s.num_experts < 1 || s.num_experts > 65536) bad("num_experts");
  if (s.top_k < 1 || s.top_k > s.num_experts) bad("top_k");
  if (s.lookahead < 1 || s.lookahead >= s.num_layers + 1) bad("lookahead");
  if (s.width < 1 || s.width > 65536) bad("width");
  if (num_nets < 1 || num_nets > s.num_layers) bad("num_nets");
  if (s.mode == LlaporMode::kHidden && (s.hidden_size < 1 || s.pca_dims < 1 || s.pca_dims > s.hidden_size))
    bad("hidden_size / pca_dims");
  if (s.mode == LlaporMode::kHistory && (s.context_layers < 1 || s.previous_tokens < 0 || s.context_layers > 4096 ||
                                         s.previous_tokens > 64))
    bad("context_layers / previous_tokens");
  if (!j.contains("layers") || !j["layers"].is_array() || static_cast<int>(j["layers"].size()) != s.num_layers)
    bad("layers (one entry per layer)");
  std::vector<int> gated_of(num_nets, -1);
  for (int l = 0; l < s.num_layers; ++l) {
    const auto& e = j["layers"][l];
    const int i = get<int>(e, "net", jpath);
    const bool g = get<bool>(e, "gated", jpath);
    if (l == s.num_layers - 1 ? i != -1 : (i < 0 || i >= num_nets)) bad("net index in layers");
    if (i >= 0) {
      if (gated_of[i] != -1 && gated_of[i] != static_cast<int>(g)) bad("layers (a shared net both gated and not)");
      gated_of[i] = g;
    }
    m.net_of_layer.push_back(i);
  }
  for (int g : gated_of)
    if (g < 0) bad("layers (a net no layer uses)");
  m.report = j.value("report", nlohmann::json::object());

  auto f = SafetensorsFile::open(wpath);
  const int F = m.feature_dims(), W = s.width, O = s.lookahead * s.num_experts;
  if (s.mode == LlaporMode::kHidden) {
    m.pca.resize(s.num_layers);
    for (int l = 0; l + 1 < s.num_layers; ++l) {
      const std::string n = "pca." + std::to_string(l);
      Pca& p = m.pca[l];
      p.in_dim = s.hidden_size;
      p.out_dim = s.pca_dims;
      p.mean = read_f32(f, n + ".mean", {s.hidden_size});
      p.components = read_f32(f, n + ".components", {s.pca_dims, s.hidden_size});
      p.variance = read_f32(f, n + ".variance", {s.pca_dims});
    }
  }
  for (int i = 0; i < num_nets; ++i) {
    const std::string n = "net." + std::to_string(i);
    LlaporNet net;
    net.gated = gated_of[i] == 1;
    net.in = read_dense(f, n + ".in", F, W);
    if (net.gated) {
      net.res = read_dense(f, n + ".res", W, W);
      net.gate = read_dense(f, n + ".gate", W, W);
    }
    net.out = read_dense(f, n + ".out", W, O);
    m.nets.push_back(std::move(net));
  }
  return m;
}

}  // namespace ferry::moe
