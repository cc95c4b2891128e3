#include "moe/sched/routing_trace.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry::moe {
namespace {

namespace fs = std::filesystem;

std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot open trace '", path, "'");
  return in;
}

nlohmann::json parse_line(const std::string& line, const std::string& path, std::size_t lineno) {
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": not valid JSON: ", e.what());
  }
}

template <typename T>
std::vector<T> get_vec(const nlohmann::json& j, const char* key, const std::string& path, std::size_t lineno) {
  if (!j.contains(key) || !j[key].is_array())
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": missing array '", key, "'");
  try {
    return j[key].get<std::vector<T>>();
  } catch (const nlohmann::json::exception&) {
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": '", key, "' has the wrong element type");
  }
}

int get_int(const nlohmann::json& j, const char* key, const std::string& path, std::size_t lineno) {
  if (!j.contains(key) || !j[key].is_number_integer())
    FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": missing integer '", key, "'");
  return j[key].get<int>();
}

void finish(RoutingTrace& t) {
  std::stable_sort(t.tokens.begin(), t.tokens.end(), [](const TraceToken& a, const TraceToken& b) {
    return a.sequence != b.sequence ? a.sequence < b.sequence : a.position < b.position;
  });
  int max_e = -1;
  for (const auto& tok : t.tokens)
    for (const auto& l : tok.experts) {
      for (int e : l) max_e = std::max(max_e, e);
      t.top_k = std::max<int>(t.top_k, static_cast<int>(l.size()));
    }
  t.num_experts = std::max(t.num_experts, max_e + 1);
  if (t.tokens.empty()) FERRY_THROW(FormatError, "trace '", t.path, "' holds no complete token");
}

}  // namespace

RoutingTrace read_mixtral_trace(const std::string& path) {
  auto in = open_or_throw(path);
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
    if (layer < 0) FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": negative layer");
    auto experts = get_vec<int>(j, "experts", path, lineno);
    std::vector<float> weights;
    if (j.contains("gating_probs")) weights = get_vec<float>(j, "gating_probs", path, lineno);
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
  t.model = j.value("model", std::string("granite"));
  t.num_layers = j.value("num_layers", 0);
  t.num_experts = j.value("num_experts", 0);
  int seq = 0;
  for (auto it = j["prompts"].begin(); it != j["prompts"].end(); ++it, ++seq) {
    int pos = 0;
    for (const char* phase : {"prefill", "decode"}) {
      if (!it.value().contains(phase)) continue;
      for (const auto& tok_j : it.value()[phase]) {
        TraceToken tok;
        tok.sequence = seq;
        tok.position = pos++;
        tok.prefill = std::string(phase) == "prefill";
        try {
          tok.experts = tok_j.get<std::vector<std::vector<int>>>();
        } catch (const nlohmann::json::exception&) {
          FERRY_THROW(FormatError, "trace '", path, "': prompt '", it.key(), "' ", phase, " token ", tok.position,
                      " is not [layer][k] integers");
        }
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
    const std::string type = j.value("type", std::string("route"));
    if (type == "meta") {
      t.model = j.value("model_id", std::string("layer0"));
      t.num_experts = j.value("num_experts", 0);
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
    tok.experts.push_back(get_vec<int>(j, "topk_ids", path, lineno));
    if (j.contains("topk_weights")) tok.weights.push_back(get_vec<float>(j, "topk_weights", path, lineno));
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

std::string find_shared_traces_dir() {
  std::vector<fs::path> roots;
  if (const char* src = std::getenv("FERRY_SOURCE_DIR")) roots.emplace_back(src);
  std::error_code ec;
  for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
    roots.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (const auto& r : roots) {
    fs::path cand = r / ".." / "shared" / "data" / "moe-traces";
    if (fs::is_directory(cand, ec)) return fs::weakly_canonical(cand, ec).string();
  }
  return "";
}

}  // namespace ferry::moe
