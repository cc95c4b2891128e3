// `ferry moe fit-predictor`: fits LLaPor on a routing trace and scores it on held-out sequences
// against the baselines (co-occurrence fitted on the same training sequences, previous token,
// next-gate when --model gives the routers, random).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include "apps/cli.h"
#include "apps/moe_subcommands.h"
#include "core/error.h"
#include "core/path_checks.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "moe/model/checkpoint.h"
#include "moe/model/weights.h"
#include "moe/predict/cooccurrence_predictor.h"
#include "moe/predict/llapor_fit.h"
#include "moe/predict/llapor_predictor.h"
#include "moe/predict/predictor_eval.h"
#include "moe/predict/previous_token_predictor.h"

namespace ferry::apps {

using namespace ferry::moe;
namespace fs = std::filesystem;

namespace {

struct FitPredictorFlags {
  std::string trace, out, model, share = "auto";
  int threads = 1;
  LlaporFitOptions o;
};

// One predictor's scores: pooled per lookahead and per source layer.
nlohmann::json score_json(const PredictorScore& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (int l = 0; l + 1 < s.num_layers; ++l) {
    nlohmann::json p = nlohmann::json::array(), r = nlohmann::json::array();
    for (int d = 0; d < s.lookahead && l + 1 + d < s.num_layers; ++d) {
      p.push_back(s.precision(l, d));
      r.push_back(s.recall(l, d));
    }
    layers.push_back({{"layer", l}, {"precision", p}, {"recall", r}});
  }
  nlohmann::json pd = nlohmann::json::array(), rd = nlohmann::json::array();
  for (int d = 0; d < s.lookahead; ++d) {
    pd.push_back(s.precision(d));
    rd.push_back(s.recall(d));
  }
  return {{"predictor", s.predictor}, {"k", s.k},           {"precision", pd},
          {"recall", rd},             {"layers", layers},   {"us_per_token", s.us_per_token()},
          {"tokens", s.tokens}};
}

int run_fit_predictor(FitPredictorFlags& f) {
  std::vector<std::string> inputs = {f.trace, f.trace + ".hidden.bin"};
  if (!f.model.empty())
    for (const std::string& m : input_files(f.model)) inputs.push_back(m);
  for (const char* name : {"llapor.json", "llapor.safetensors", "eval.csv"})
    require_output_not_input((fs::path(f.out) / name).string(), "--out", inputs, "--trace or --model");
  torch::set_num_threads(f.threads);
  auto t = read_predictor_trace(f.trace);
  LlaporFitOptions& o = f.o;
  FERRY_REQUIRE(f.share == "auto" || f.share == "on" || f.share == "off", "invalid --share-layers '", f.share,
                "': expected auto, on or off");
  const std::string mode = o.mode == "auto" ? (t.has_hidden() ? "hidden" : "history") : o.mode;
  o.share_layers = f.share == "on" || (f.share == "auto" && mode == "history");
  const auto split = llapor_split(t, o);
  FERRY_REQUIRE(f.model.empty() || t.has_hidden(), "--model (next-gate baseline) needs a trace with hidden states");
  std::printf("trace %s: %zu tokens, %d layers, %d experts (top-%d), %s; mode %s, lookahead %d; train sequences %zu, "
              "test %zu\n",
              f.trace.c_str(), t.trace.tokens.size(), t.trace.num_layers, t.trace.num_experts, t.trace.top_k,
              t.has_hidden() ? ("hidden states " + std::to_string(t.hidden_size)).c_str() : "no hidden states",
              mode.c_str(), o.lookahead, split.train.size(), split.test.size());

  ProgressOptions po;
  po.label = "fit-predictor";
  po.unit = "epoch";
  std::unique_ptr<Progress> bar;  // total known once fitting starts (epochs x networks)
  auto model = fit_llapor(t, o, [&](int done, int total, const std::string& msg) {
    if (!bar) bar = std::make_unique<Progress>(total, po);
    bar->update(done, msg);
  });
  if (bar) bar->finish();
  model.save(f.out);

  PredictorContext ctx{nullptr, t.trace.num_layers, t.trace.num_experts, t.trace.top_k};
  std::vector<std::unique_ptr<Predictor>> preds;
  auto llapor = load_llapor_predictor(f.out, ctx);  // what was written, read back
  preds.push_back(std::move(llapor));
  CooccurrenceOptions co;
  co.max_lookahead = o.lookahead;
  co.learn_online = false;
  auto cooc = std::make_unique<CooccurrencePredictor>(t.trace.num_layers, t.trace.num_experts, t.trace.top_k, co);
  for (const auto& tok : t.trace.tokens)
    if (std::find(split.train.begin(), split.train.end(), tok.sequence) != split.train.end())
      cooc->add_token(tok.experts);
  preds.push_back(std::move(cooc));
  preds.push_back(make_previous_token_predictor(t.trace.num_layers, t.trace.num_experts, t.trace.top_k));
  std::unique_ptr<Checkpoint> ck;
  DenseWeights dw;
  RouterView rv;
  if (!f.model.empty()) {
    ck = Checkpoint::open(f.model);
    dw = load_dense_weights(*ck);
    const auto& c = dw.config;
    FERRY_REQUIRE(c.num_moe_layers() == t.trace.num_layers && c.num_experts == t.trace.num_experts &&
                      c.hidden_size == t.hidden_size,
                  "--model '", f.model, "' (", c.num_moe_layers(), " MoE layers, ", c.num_experts, " experts, hidden ",
                  c.hidden_size, ") is not the model of trace '", f.trace, "'");
    rv = router_view(dw);
    preds.push_back(make_next_gate_predictor(&rv));
  }

  nlohmann::json results = nlohmann::json::array();
  std::ofstream csv(fs::path(f.out) / "eval.csv");
  csv << "predictor,split,layer,lookahead,k,precision,recall\n";
  std::printf("\nheld-out top-%d precision / recall by lookahead (sequences", t.trace.top_k);
  for (int q : split.test) std::printf(" %d", q);
  std::printf("), random %.3f:\n", static_cast<double>(t.trace.top_k) / t.trace.num_experts);
  std::printf("%-16s", "predictor");
  for (int d = 0; d < o.lookahead; ++d) std::printf("   l+%d P / R   ", d + 1);
  std::printf("  us/token\n");
  for (auto& p : preds) {
    for (const auto* which : {"test", "train"}) {
      const bool test = std::string(which) == "test";
      auto s = evaluate_predictor(*p, t, test ? split.test : split.train, o.lookahead);
      for (int l = 0; l + 1 < s.num_layers; ++l)
        for (int d = 0; d < s.lookahead && l + 1 + d < s.num_layers; ++d)
          csv << s.predictor << ',' << which << ',' << l << ',' << d + 1 << ',' << s.k << ',' << s.precision(l, d)
              << ',' << s.recall(l, d) << '\n';
      auto j = score_json(s);
      j["split"] = which;
      results.push_back(j);
      if (!test) continue;
      std::printf("%-16s", s.predictor.c_str());
      for (int d = 0; d < o.lookahead; ++d) std::printf("  %.3f / %.3f", s.precision(d), s.recall(d));
      std::printf("  %8.1f\n", s.us_per_token());
      if (&p == &preds.front()) {  // the predictor this command fitted: its layers' recall
        std::printf("  per layer, l+1 recall:");
        for (int l = 0; l + 1 < s.num_layers; ++l) std::printf(" %.2f", s.recall(l, 0));
        std::printf("\n");
      }
    }
  }
  model.report["evaluation"] = results;
  model.report["command_trace"] = f.trace;
  model.save(f.out);  // with the evaluation in llapor.json
  std::printf("wrote %s/llapor.json, llapor.safetensors, eval.csv\n", f.out.c_str());
  return 0;
}

}  // namespace

MoeSubcommand add_fit_predictor_command(CLI::App& moe) {
  auto flags = std::make_shared<FitPredictorFlags>();
  auto& f = *flags;
  auto* c = moe.add_subcommand("fit-predictor", "fit the LLaPor expert-activation predictor on a trace; held-out "
                                                "precision/recall@k against the baselines");
  c->add_option("--trace", f.trace, "routing trace (JSONL; hidden states read from FILE.hidden.bin)")->required();
  c->add_option("--out", f.out, "directory for llapor.json, llapor.safetensors, eval.csv")->required();
  c->add_option("--mode", f.o.mode, "hidden, history or auto (hidden when the trace has hidden states)")
      ->capture_default_str();
  c->add_option("--lookahead", f.o.lookahead, "layers ahead to predict (D)")->capture_default_str();
  c->add_option("--pca-dims", f.o.pca_dims, "hidden mode: PCA components")->capture_default_str();
  c->add_option("--routing-features", f.o.routing_features, "hidden mode: add the layer's gate weights (true/false)")
      ->capture_default_str();
  c->add_option("--width", f.o.width, "hidden units per block")->capture_default_str();
  c->add_option("--context-layers", f.o.context_layers, "history mode: earlier layers of the token read")
      ->capture_default_str();
  c->add_option("--previous-tokens", f.o.previous_tokens, "history mode: previous tokens read")->capture_default_str();
  c->add_option("--share-layers", f.share, "one net per layer group: on, off, auto (on in history mode)")
      ->capture_default_str();
  c->add_option("--groups", f.o.groups, "shallow/gated grouping: auto (from the trace), positional, shallow, gated")
      ->capture_default_str();
  c->add_option("--epochs", f.o.epochs, "passes over each network's rows")->capture_default_str();
  c->add_option("--batch", f.o.batch, "rows per step")->capture_default_str();
  c->add_option("--lr", f.o.lr, "Adam learning rate")->capture_default_str();
  c->add_option("--dropout", f.o.dropout, "dropout after each block")->capture_default_str();
  c->add_option("--max-rows", f.o.max_rows, "training rows per network")->capture_default_str();
  c->add_option("--seed", f.o.seed, "seed")->capture_default_str();
  c->add_option("--train-seqs", f.o.train_sequences, "comma-separated training sequence ids")->delimiter(',');
  c->add_option("--test-seqs", f.o.test_sequences, "comma-separated test sequence ids")->delimiter(',');
  c->add_option("--heldout", f.o.heldout_fraction, "share of sequences held out (last ones)")->capture_default_str();
  c->add_option("--model", f.model, "model directory: adds the next-gate baseline (hidden-state traces)");
  c->add_option("--threads", f.threads, "libtorch threads")->check(thread_count())->capture_default_str();
  return MoeSubcommand{c, [flags] { return run_fit_predictor(*flags); }};
}

}  // namespace ferry::apps
