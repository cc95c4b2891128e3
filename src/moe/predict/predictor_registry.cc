#include "moe/predict/predictor_registry.h"

#include <algorithm>

#include "core/error.h"
#include "core/registry.h"
#include "core/registry_names.h"
#include "moe/predict/cooccurrence_predictor.h"
#include "moe/predict/llapor_predictor.h"
#include "moe/predict/previous_token_predictor.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {
namespace {

Registry<PredictorEntry>& registry() {
  static Registry<PredictorEntry> r("predictor");
  return r;
}

void require_shape(const PredictorContext& ctx, const std::string& name) {
  FERRY_REQUIRE(ctx.num_layers > 0 && ctx.num_experts > 0 && ctx.top_k > 0, "predictor '", name,
                "' needs the model's layers, experts and top-k (got ", ctx.num_layers, ", ", ctx.num_experts, ", ",
                ctx.top_k, ")");
}

std::unique_ptr<Predictor> make_cooccurrence(SpecReader& spec, const PredictorContext& ctx) {
  const std::string path = spec.get_string("trace", "");
  spec.finish();
  if (path.empty()) {
    require_shape(ctx, "cooccurrence");
    return make_cooccurrence_predictor(ctx.num_layers, ctx.num_experts, ctx.top_k);
  }
  auto trace = read_routing_trace(path);
  FERRY_REQUIRE(ctx.num_layers == 0 || ctx.num_layers == trace.num_layers, "predictor 'cooccurrence:", path,
                "': the trace has ", trace.num_layers, " layers, the model ", ctx.num_layers);
  FERRY_REQUIRE(ctx.num_experts == 0 || ctx.num_experts >= trace.num_experts, "predictor 'cooccurrence:", path,
                "': the trace routes to ", trace.num_experts, " experts, the model has ", ctx.num_experts);
  CooccurrenceOptions o;
  o.learn_online = false;
  auto p = std::make_unique<CooccurrencePredictor>(trace.num_layers, std::max(ctx.num_experts, trace.num_experts),
                                                   std::max(ctx.top_k, trace.top_k), o);
  p->fit(trace);
  return p;
}

}  // namespace

void register_predictor(PredictorEntry entry) {
  FERRY_CHECK(entry.make != nullptr, "predictor '", entry.name, "' has no factory");
  registry().add(std::move(entry));
}

void register_builtin_predictors() {
  auto& r = registry();
  r.add_if_absent({.name = "next-gate", .summary = "the next layers' routers applied to the current hidden state",
                   .needs_routers = true, .make = [](SpecReader& spec, const PredictorContext& ctx) {
                     spec.finish();
                     FERRY_REQUIRE(ctx.routers != nullptr,
                                   "predictor 'next-gate' needs the model's routers (not available in trace replay)");
                     return make_next_gate_predictor(ctx.routers);
                   }});
  r.add_if_absent({.name = "cooccurrence", .summary = "expert co-activation table (online, or fitted on trace=FILE)",
                   .positional_key = "trace", .make = make_cooccurrence});
  r.add_if_absent({.name = "previous-token", .summary = "the previous token's experts at each layer",
                   .make = [](SpecReader& spec, const PredictorContext& ctx) {
                     spec.finish();
                     require_shape(ctx, "previous-token");
                     return make_previous_token_predictor(ctx.num_layers, ctx.num_experts, ctx.top_k);
                   }});
  r.add_if_absent({.name = "llapor", .summary = "LLaPor, layer-aware learned predictor (dir=DIR of fit-predictor)",
                   .positional_key = "dir", .make = [](SpecReader& spec, const PredictorContext& ctx) {
                     const std::string dir = spec.get_string("dir", "");
                     spec.finish();
                     FERRY_REQUIRE(!dir.empty(),
                                   "predictor 'llapor' needs a directory: llapor:DIR (written by ferry moe fit-predictor)");
                     return load_llapor_predictor(dir, ctx);
                   }});
}

std::unique_ptr<Predictor> make_predictor(const std::string& spec, const PredictorContext& ctx) {
  register_builtin_predictors();
  auto [entry, reader] = registry().parse(spec);
  std::unique_ptr<Predictor> p = entry->make(reader, ctx);
  reader.finish();
  return p;
}

const PredictorEntry& predictor_entry(const std::string& spec) {
  register_builtin_predictors();
  return registry().at(Spec::name_of(spec));
}

std::vector<std::string> predictor_names() {
  register_builtin_predictors();
  return registry().names();
}

std::vector<std::string> trace_predictor_names() {
  register_builtin_predictors();
  return names_where(registry(), [](const auto& e) { return !e.needs_routers; });
}

}  // namespace ferry::moe
