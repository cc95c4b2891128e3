#include "advise/model_profile.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"

namespace ferry::advise {

std::size_t ModelProfile::parameters() const {
  std::size_t n = 0;
  for (const auto& t : tensors) n += t.numel;
  return n;
}

double ModelProfile::compute_s(std::int64_t b) const {
  const double scale = static_cast<double>(b) / static_cast<double>(batch);
  return (forward_s + backward_s) * scale + update_s;
}

void validate(const ModelProfile& p, const std::string& what) {
  FERRY_REQUIRE(!p.tensors.empty(), what, ": a model profile needs at least one tensor");
  FERRY_REQUIRE_OP(p.batch, >=, 1, what, ": batch");
  auto time_ok = [](double t) { return std::isfinite(t) && t >= 0; };
  FERRY_REQUIRE(time_ok(p.forward_s) && time_ok(p.backward_s) && time_ok(p.update_s), what,
                ": forward_s, backward_s and update_s must be finite and at least 0, got ", p.forward_s, ", ",
                p.backward_s, ", ", p.update_s);
  FERRY_REQUIRE_OP(p.forward_s + p.backward_s, >, 0, what, ": forward_s + backward_s");
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    const auto& t = p.tensors[i];
    FERRY_REQUIRE(t.numel > 0, what, ": tensor ", i, " (", t.name, ") has numel 0");
    FERRY_REQUIRE(t.forward_start >= 0 && t.forward_start <= 1 && t.backward_ready >= 0 && t.backward_ready <= 1,
                  what, ": tensor ", i, " (", t.name, "): forward_start and backward_ready must lie in [0, 1], got ",
                  t.forward_start, " and ", t.backward_ready);
  }
}

nlohmann::json to_json(const ModelProfile& p) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : p.tensors)
    tensors.push_back({{"name", t.name}, {"numel", t.numel}, {"forward_start", t.forward_start},
                       {"backward_ready", t.backward_ready}, {"shape", t.shape}});
  return {{"name", p.name},         {"device", p.device},         {"batch", p.batch},
          {"forward_s", p.forward_s}, {"backward_s", p.backward_s}, {"update_s", p.update_s},
          {"source", p.source},     {"device_tflops", p.device_tflops}, {"compute_noise", p.compute_noise},
          {"tensors", tensors}};
}

namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& what) {
  if (!j.is_object() || !j.contains(key))
    FERRY_THROW(FormatError, what, ": model profile lacks the field '", key, "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    FERRY_THROW(FormatError, what, ": model profile field '", key, "' has the wrong type (", j.at(key).dump(), ")");
  }
}

}  // namespace

ModelProfile model_profile_from_json(const nlohmann::json& j, const std::string& what) {
  ModelProfile p;
  p.name = field<std::string>(j, "name", what);
  p.device = j.value("device", std::string("local"));
  p.batch = field<std::int64_t>(j, "batch", what);
  p.forward_s = field<double>(j, "forward_s", what);
  p.backward_s = field<double>(j, "backward_s", what);
  p.update_s = j.contains("update_s") ? field<double>(j, "update_s", what) : 0.0;
  p.source = j.value("source", std::string());
  p.device_tflops = j.contains("device_tflops") ? field<double>(j, "device_tflops", what) : 0.0;
  if (!(p.device_tflops >= 0)) FERRY_THROW(FormatError, what, ": device_tflops must be at least 0");
  p.compute_noise = j.contains("compute_noise") ? field<double>(j, "compute_noise", what) : 0.0;
  if (!(p.compute_noise >= 0) || !std::isfinite(p.compute_noise))
    FERRY_THROW(FormatError, what, ": compute_noise must be finite and at least 0");
  const auto tensors = field<nlohmann::json>(j, "tensors", what);
  if (!tensors.is_array()) FERRY_THROW(FormatError, what, ": 'tensors' must be an array");
  const std::size_t n = tensors.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& t = tensors[i];
    TensorProfile tp;
    if (t.is_number()) {  // a bare gradient-size list: element counts in registration order
      const double v = t.get<double>();
      if (!(v >= 1) || v != std::floor(v))
        FERRY_THROW(FormatError, what, ": tensor ", i, " numel must be an integer of at least 1, got ", t.dump());
      tp.numel = static_cast<std::size_t>(v);
    } else {
      const double v = field<double>(t, "numel", what);
      if (!(v >= 1) || v != std::floor(v))
        FERRY_THROW(FormatError, what, ": tensor ", i, " numel must be an integer of at least 1, got ", v);
      tp.numel = static_cast<std::size_t>(v);
      tp.name = t.value("name", std::string());
    }
    // Without measured offsets: forward reads the tensors in order, backward produces them in
    // reverse, each taking an equal share of the pass.
    tp.forward_start = static_cast<double>(i) / static_cast<double>(n);
    tp.backward_ready = static_cast<double>(n - i) / static_cast<double>(n);
    if (t.is_object()) {
      if (t.contains("forward_start")) tp.forward_start = field<double>(t, "forward_start", what);
      if (t.contains("backward_ready")) tp.backward_ready = field<double>(t, "backward_ready", what);
      if (t.contains("shape")) {
        tp.shape = field<std::vector<std::int64_t>>(t, "shape", what);
        std::int64_t prod = 1;
        for (auto d : tp.shape) prod *= d;
        if (!tp.shape.empty() && prod != static_cast<std::int64_t>(tp.numel))
          FERRY_THROW(FormatError, what, ": tensor ", i, " shape does not multiply to its numel ", tp.numel);
      }
    }
    if (tp.name.empty()) tp.name = "tensor" + std::to_string(i);
    p.tensors.push_back(tp);
  }
  validate(p, what);
  return p;
}

ModelProfile load_model_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot read model profile file ", path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) FERRY_THROW(FormatError, "model profile file ", path, " is not valid JSON");
  return model_profile_from_json(j, "model profile file " + path);
}

void save_model_profile(const ModelProfile& p, const std::string& path) { write_json_file(path, to_json(p)); }

}  // namespace ferry::advise
