#include "moe/predict/predictor_registry.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.h"
#include "moe/predict/cooccurrence_predictor.h"
#include "moe/predict/llapor_predictor.h"
#include "moe/predict/previous_token_predictor.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, PredictorFactory>& registry() {
  static std::map<std::string, PredictorFactory> r;
  return r;
}

void require_shape(const PredictorContext& ctx, const std::string& name) {
  FERRY_REQUIRE(ctx.num_layers > 0 && ctx.num_experts > 0 && ctx.top_k > 0, "predictor '", name,
                "' needs the model's layers, experts and top-k (got ", ctx.num_layers, ", ", ctx.num_experts, ", ",
                ctx.top_k, ")");
}

}  // namespace

void register_predictor(const std::string& name, PredictorFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[name] = std::move(factory);
}

void register_builtin_predictors() {
  register_predictor("next-gate", [](const std::string& arg, const PredictorContext& ctx) {
    FERRY_REQUIRE(arg.empty(), "predictor 'next-gate' takes no argument (got '", arg, "')");
    FERRY_REQUIRE(ctx.routers != nullptr, "predictor 'next-gate' needs the model's routers (not available in trace replay)");
    return make_next_gate_predictor(ctx.routers);
  });
  register_predictor("cooccurrence", [](const std::string& arg, const PredictorContext& ctx) {
    if (arg.empty()) {
      require_shape(ctx, "cooccurrence");
      return make_cooccurrence_predictor(ctx.num_layers, ctx.num_experts, ctx.top_k);
    }
    auto trace = read_routing_trace(arg);
    FERRY_REQUIRE(ctx.num_layers == 0 || ctx.num_layers == trace.num_layers, "predictor 'cooccurrence:", arg,
                  "': the trace has ", trace.num_layers, " layers, the model ", ctx.num_layers);
    FERRY_REQUIRE(ctx.num_experts == 0 || ctx.num_experts >= trace.num_experts, "predictor 'cooccurrence:", arg,
                  "': the trace routes to ", trace.num_experts, " experts, the model has ", ctx.num_experts);
    CooccurrenceOptions o;
    o.learn_online = false;
    auto p = std::make_unique<CooccurrencePredictor>(trace.num_layers, std::max(ctx.num_experts, trace.num_experts),
                                                     std::max(ctx.top_k, trace.top_k), o);
    p->fit(trace);
    return std::unique_ptr<Predictor>(std::move(p));
  });
  register_predictor("previous-token", [](const std::string& arg, const PredictorContext& ctx) {
    FERRY_REQUIRE(arg.empty(), "predictor 'previous-token' takes no argument (got '", arg, "')");
    require_shape(ctx, "previous-token");
    return make_previous_token_predictor(ctx.num_layers, ctx.num_experts, ctx.top_k);
  });
  register_predictor("llapor", [](const std::string& arg, const PredictorContext& ctx) {
    FERRY_REQUIRE(!arg.empty(), "predictor 'llapor' needs a directory: llapor:DIR (written by ferry moe fit-predictor)");
    return load_llapor_predictor(arg, ctx);
  });
}

std::unique_ptr<Predictor> make_predictor(const std::string& spec, const PredictorContext& ctx) {
  register_builtin_predictors();
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  PredictorFactory f;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(name);
    if (it != registry().end()) f = it->second;
  }
  if (!f) {
    std::string known;
    for (const auto& n : predictor_names()) known += (known.empty() ? "" : ", ") + n;
    FERRY_THROW(InvalidArgument, "unknown predictor '", spec, "' (known: ", known, ")");
  }
  return f(arg, ctx);
}

std::vector<std::string> predictor_names() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> out;
  for (const auto& [n, f] : registry()) out.push_back(n);
  return out;
}

}  // namespace ferry::moe
