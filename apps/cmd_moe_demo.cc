// `ferry moe demo`: a short offloading comparison of the policies on a tiny model (~1 min), the
// pretrained one when runs/moe-tiny holds it, else a random-weight one written for the demo.
#include <filesystem>
#include <memory>
#include <string>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include "apps/moe_subcommands.h"
#include "core/corpus.h"
#include "moe/engine/bench.h"
#include "moe/model/pretrain.h"
#include "moe/model/tiny_model.h"

namespace ferry::apps {
namespace {

using namespace ferry::moe;
namespace fs = std::filesystem;

int run_demo(const std::string& dir) {
  at::set_num_threads(1);
  // Prefer the pretrained tiny model when it exists; otherwise a random-weight one.
  std::string model = "runs/moe-tiny";
  if (!fs::exists(fs::path(model) / "config.json")) {
    model = (fs::path(dir) / "model").string();
    if (!fs::exists(fs::path(model) / "config.json")) {
      TinyModelOptions t;
      t.config = pretrain_default_config();
      make_tiny_model(model, t);
    }
  }
  BenchOptions d;
  d.model_dir = model;
  d.policies = {"ondemand", "lru", "static-hot", "next-gate", "fiddler", "moe-infinity", "prescope"};
  d.batches = {1, 4};
  d.budgets = {"25%"};
  d.new_tokens = 24;
  d.prompt_tokens = 16;
  d.corpus = default_corpus_path();
  return run_bench_report(d, (fs::path(dir) / "bench").string(), 1, false);
}

}  // namespace

MoeSubcommand add_demo_command(CLI::App& moe) {
  auto dir = std::make_shared<std::string>("runs/moe-demo");
  auto* dm = moe.add_subcommand("demo", "a short offloading comparison of the policies on a tiny model (~1 min)");
  dm->add_option("--dir", *dir, "where the tiny model and results go")->capture_default_str();
  return MoeSubcommand{dm, [dir] { return run_demo(*dir); }};
}

}  // namespace ferry::apps
