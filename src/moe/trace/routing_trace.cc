#include "moe/trace/routing_trace.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/paths.h"

namespace ferry::moe {
namespace {


std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot open trace '", path, "'");
  return in;
}

nlohmann::json parse_line(const std::string& line, const std::string& path, std::size_t lineno) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": not valid JSON: ", e.what());
  }
  if (!j.is_object()) FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": expected a JSON object");
  return j;
}

// An integer that fits an int (nlohmann's get<int>() truncates larger ones silently and converts
// floats, which is undefined behaviour out of range).
bool is_int(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT32_MAX);
  return v.is_number_integer() && v.get<std::int64_t>() >= INT32_MIN && v.get<std::int64_t>() <= INT32_MAX;
}

// Expert ids of one layer: integers in [0, kMaxTraceExperts).
std::vector<int> get_experts(const nlohmann::json& v, const std::string& where) {
  if (!v.is_array()) FERRY_THROW(FormatError, where, ": expected an array of expert ids");
  std::vector<int> out;
  for (const auto& e : v) {
    if (!is_int(e) || e.get<int>() < 0 || e.get<int>() >= kMaxTraceExperts)
      FERRY_THROW(FormatError, where, ": expert id ", e.dump(), " is not an integer in [0, ", kMaxTraceExperts, ")");
    if (std::find(out.begin(), out.end(), e.get<int>()) != out.end())
      FERRY_THROW(FormatError, where, ": expert ", e.get<int>(), " appears twice (a token routes to distinct experts)");
    out.push_back(e.get<int>());
  }
  if (out.empty()) FERRY_THROW(FormatError, where, ": no experts");
  return out;
}

// j[key] as T when present, else `fallback`; a value of another type is a FormatError.
template <typename T>
T value_or(const nlohmann::json& j, const char* key, T fallback, const std::string& where) {
  if (!j.contains(key)) return fallback;
  const auto& v = j[key];
  if constexpr (std::is_same_v<T, int>) {
    if (is_int(v)) return v.get<int>();
  } else {
    if (v.is_string()) return v.get<std::string>();
  }
  FERRY_THROW(FormatError, where, ": '", key, "' has the wrong type (", v.dump(), ")");
}

std::string line_name(const std::string& path, std::size_t lineno) {
  return "trace '" + path + "' line " + std::to_string(lineno);
}

std::vector<int> get_expert_vec(const nlohmann::json& j, const char* key, const std::string& path, std::size_t lineno) {
  if (!j.contains(key) || !j[key].is_array())
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": missing array '", key, "'");
  return get_experts(j[key], line_name(path, lineno) + ": '" + key + "'");
}

std::vector<float> get_weight_vec(const nlohmann::json& j, const char* key, std::size_t expected_size,
                                  const std::string& path, std::size_t lineno) {
  if (!j[key].is_array() || j[key].size() != expected_size)
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": '", key, "' must be an array of ", expected_size,
                " numbers, one per expert");
  std::vector<float> out;
  for (const auto& w : j[key]) {
    if (!w.is_number() || !(w.get<double>() >= 0 && w.get<double>() <= 1))
      FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": '", key, "' holds ", w.dump(),
                  ": gate probabilities are numbers in [0, 1]");
    out.push_back(w.get<float>());
  }
  return out;
}

int get_int(const nlohmann::json& j, const char* key, const std::string& path, std::size_t lineno) {
  if (!j.contains(key) || !is_int(j[key]))
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": missing integer '", key, "'");
  return j[key].get<int>();
}

void finish(RoutingTrace& t) {
  std::stable_sort(t.tokens.begin(), t.tokens.end(), [](const TraceToken& a, const TraceToken& b) {
    return a.sequence != b.sequence ? a.sequence < b.sequence : a.position < b.position;
  });
  if (t.tokens.empty()) FERRY_THROW(FormatError, "trace '", t.path, "' holds no complete token");
  // Consumers index per-layer and per-expert tables with these numbers without further checks.
  if (t.num_layers < 1 || t.num_layers > kMaxTraceLayers)
    FERRY_THROW(FormatError, "trace '", t.path, "': ", t.num_layers, " layers, expected 1..", kMaxTraceLayers);
  if (t.num_experts < 0 || t.num_experts > kMaxTraceExperts)
    FERRY_THROW(FormatError, "trace '", t.path, "': num_experts ", t.num_experts, ", expected 0..", kMaxTraceExperts);
  const int declared = t.num_experts;
  int max_e = -1;
  for (const auto& tok : t.tokens)
    for (const auto& l : tok.experts) {
      for (int e : l) max_e = std::max(max_e, e);  // get_experts bounded e below kMaxTraceExperts
      t.top_k = std::max<int>(t.top_k, static_cast<int>(l.size()));
    }
  if (declared > 0 && max_e >= declared)
    FERRY_THROW(FormatError, "trace '", t.path, "': expert id ", max_e, " out of range for num_experts ", declared);
  t.num_experts = std::max(t.num_experts, max_e + 1);
}

}  // namespace

RoutingTrace read_mixtral_trace(const std::string& path) {
  auto in = open_or_throw(path);
  return read_mixtral_trace(in, path);
}

RoutingTrace read_mixtral_trace(std::istream& in, const std::string& path) {
  RoutingTrace t;
  t.path = path;
  // (sequence key, token) -> layer -> (experts, weights)
  std::map<std::pair<std::string, int>, std::map<int, std::pair<std::vector<int>, std::vector<float>>>> rows;
  std::map<std::string, int> seq_ids;
  std::string line;
  std::size_t lineno = 0;
  int max_layer = -1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = parse_line(line, path, lineno);
    const std::string seq = (j.contains("dataset") ? j["dataset"].dump() : "") + "/" +
                            (j.contains("problem_id") ? j["problem_id"].dump() : "0");
    if (!seq_ids.count(seq)) {
      const int next = static_cast<int>(seq_ids.size());
      seq_ids[seq] = next;
    }
    const int layer = get_int(j, "layer", path, lineno);
    const int token = get_int(j, "token_idx", path, lineno);
    if (layer < 0 || layer >= kMaxTraceLayers)
      FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": layer ", layer, " not in [0, ", kMaxTraceLayers, ")");
    auto experts = get_expert_vec(j, "experts", path, lineno);
    std::vector<float> weights;
    if (j.contains("gating_probs")) weights = get_weight_vec(j, "gating_probs", experts.size(), path, lineno);
    max_layer = std::max(max_layer, layer);
    rows[{seq, token}][layer] = {std::move(experts), std::move(weights)};
    if (t.model.empty() && j.contains("model") && j["model"].is_string()) t.model = j["model"].get<std::string>();
  }
  t.num_layers = max_layer + 1;
  if (t.model.empty()) t.model = "mixtral";
  for (auto& [key, layers] : rows) {
    if (static_cast<int>(layers.size()) != t.num_layers) continue;  // incomplete token
    TraceToken tok;
    tok.sequence = seq_ids[key.first];
    tok.position = key.second;
    for (auto& [l, ew] : layers) {
      tok.experts.push_back(std::move(ew.first));
      tok.weights.push_back(std::move(ew.second));
    }
    t.tokens.push_back(std::move(tok));
  }
  finish(t);
  return t;
}

RoutingTrace read_granite_trace(const std::string& path) {
  auto in = open_or_throw(path);
  return read_granite_trace(in, path);
}

RoutingTrace read_granite_trace(std::istream& in, const std::string& path) {
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "trace '", path, "' is not valid JSON: ", e.what());
  }
  RoutingTrace t;
  t.path = path;
  if (!j.contains("prompts") || !j["prompts"].is_object())
    FERRY_THROW(FormatError, "trace '", path, "': missing object 'prompts'");
  const std::string where = "trace '" + path + "'";
  t.model = value_or<std::string>(j, "model", "granite", where);
  t.num_layers = value_or<int>(j, "num_layers", 0, where);
  t.num_experts = value_or<int>(j, "num_experts", 0, where);
  if (t.num_layers < 0 || t.num_layers > kMaxTraceLayers)
    FERRY_THROW(FormatError, where, ": num_layers ", t.num_layers, ", expected 1..", kMaxTraceLayers);
  int seq = 0;
  for (auto it = j["prompts"].begin(); it != j["prompts"].end(); ++it, ++seq) {
    int pos = 0;
    for (const char* phase : {"prefill", "decode"}) {
      if (!it.value().contains(phase)) continue;
      if (!it.value()[phase].is_array())
        FERRY_THROW(FormatError, where, ": prompt '", it.key(), "' ", phase, " is not an array of tokens");
      for (const auto& tok_j : it.value()[phase]) {
        TraceToken tok;
        tok.sequence = seq;
        tok.position = pos++;
        tok.prefill = std::string(phase) == "prefill";
        const std::string token_name =
            where + ": prompt '" + it.key() + "' " + phase + " token " + std::to_string(tok.position);
        if (!tok_j.is_array()) FERRY_THROW(FormatError, token_name, " is not [layer][k] integers");
        for (const auto& layer_j : tok_j) tok.experts.push_back(get_experts(layer_j, token_name));
        if (t.num_layers == 0) t.num_layers = static_cast<int>(tok.experts.size());
        if (static_cast<int>(tok.experts.size()) != t.num_layers)
          FERRY_THROW(FormatError, "trace '", path, "': prompt '", it.key(), "' token ", tok.position, " has ",
                      tok.experts.size(), " layers, expected ", t.num_layers);
        t.tokens.push_back(std::move(tok));
      }
    }
  }
  finish(t);
  return t;
}

RoutingTrace read_layer0_trace(const std::string& path) {
  auto in = open_or_throw(path);
  return read_layer0_trace(in, path);
}

RoutingTrace read_layer0_trace(std::istream& in, const std::string& path) {
  RoutingTrace t;
  t.path = path;
  t.num_layers = 1;
  std::map<std::string, int> seq_ids;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = parse_line(line, path, lineno);
    const std::string where = line_name(path, lineno);
    const std::string type = value_or<std::string>(j, "type", "route", where);
    if (type == "meta") {
      t.model = value_or<std::string>(j, "model_id", "layer0", where);
      t.num_experts = value_or<int>(j, "num_experts", 0, where);
      continue;
    }
    if (type != "route") continue;
    if (get_int(j, "layer", path, lineno) != 0) continue;
    const std::string req = j.contains("req_id") ? j["req_id"].dump() : "0";
    if (!seq_ids.count(req)) {
      const int next = static_cast<int>(seq_ids.size());
      seq_ids[req] = next;
    }
    TraceToken tok;
    tok.sequence = seq_ids[req];
    tok.position = get_int(j, "token_idx", path, lineno);
    tok.experts.push_back(get_expert_vec(j, "topk_ids", path, lineno));
    if (j.contains("topk_weights"))
      tok.weights.push_back(get_weight_vec(j, "topk_weights", tok.experts[0].size(), path, lineno));
    t.tokens.push_back(std::move(tok));
  }
  if (t.model.empty()) t.model = "layer0";
  finish(t);
  return t;
}

RoutingTrace read_routing_trace(const std::string& path) {
  auto in = open_or_throw(path);
  std::string first;
  std::getline(in, first);
  if (first.find("\"prompts\"") != std::string::npos || (first.size() > 0 && first[0] == '{' &&
                                                         first.find("\"num_layers\"") != std::string::npos))
    return read_granite_trace(path);
  if (first.find("\"type\"") != std::string::npos) return read_layer0_trace(path);
  if (first.find("\"experts\"") != std::string::npos) return read_mixtral_trace(path);
  FERRY_THROW(FormatError, "trace '", path, "': unknown format (expected Mixtral JSONL, granite JSON or layer-0 JSONL)");
}

std::string find_shared_traces_dir() { return find_upward("../shared/data/moe-traces", true); }

}  // namespace ferry::moe
