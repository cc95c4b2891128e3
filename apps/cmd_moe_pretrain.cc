// `ferry moe pretrain`: trains a small MoE on text so that its routers are learned, then compares
// its routing on held-out text with the random-weight model's.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/corpus_sequences.h"
#include "apps/model_flags.h"
#include "apps/moe_subcommands.h"
#include "core/corpus.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "core/units.h"
#include "moe/engine/trace_recorder.h"
#include "moe/model/pretrain.h"
#include "moe/trace/routing_stats.h"

namespace ferry::apps {
namespace {

using namespace ferry::moe;
namespace fs = std::filesystem;

struct PretrainFlags {
  PretrainOptions pre;
  int threads = 1;  // one thread trains faster than two on a shared 2-core machine
  std::string dtype = "f32";
};

int run_pretrain(PretrainOptions& o, int threads, const std::string& dtype) {
  at::set_num_threads(threads);
  o.dtype = dtype_flag(dtype);
  if (o.corpus.empty()) o.corpus = default_corpus_path();
  ProgressOptions po;
  po.label = "pretrain";
  po.unit = "step";
  Progress bar(o.steps, po);
  auto r = pretrain(o, [&](int step, int, double loss) {
    char s[64];
    std::snprintf(s, sizeof s, "loss %.3f", loss);
    bar.update(step, s);
  });
  bar.finish();
  std::printf("trained %d steps in %.0f s on %s (%s train, %s held out)\n", r.steps_done, r.seconds, o.corpus.c_str(),
              format_bytes(static_cast<double>(r.train_bytes)).c_str(),
              format_bytes(static_cast<double>(r.heldout_bytes)).c_str());
  std::printf("held-out perplexity per byte: %.3f trained, %.3f random init (train loss %.3f)\n", r.heldout_ppl,
              r.random_heldout_ppl, r.final_train_loss);
  // Routing statistics on held-out text: trained vs random-weight model.
  auto seqs = corpus_sequences(o.out_dir, o.corpus, 16, 256, true);
  const std::string random_dir = (fs::path(o.out_dir) / "random-init").string();
  auto trained = routing_stats(record_routing(o.out_dir, seqs));
  auto random = routing_stats(record_routing(random_dir, seqs));
  std::printf("routing, trained: %s\nrouting, random:  %s\n", format_routing_stats(trained).c_str(),
              format_routing_stats(random).c_str());
  auto js = [](const RoutingStats& s) {
    return nlohmann::json{{"load_cv", s.load_cv},
                          {"max_load_ratio", s.max_load_ratio},
                          {"load_entropy", s.load_entropy},
                          {"next_layer_precision", s.next_layer_precision},
                          {"previous_token_precision", s.previous_token_precision},
                          {"random_precision", s.random_precision},
                          {"tokens", s.tokens}};
  };
  write_json_file((fs::path(o.out_dir) / "pretrain.json").string(),
                  {{"corpus", o.corpus},
                   {"steps", r.steps_done},
                   {"seconds", r.seconds},
                   {"batch", o.batch},
                   {"seq_len", o.seq_len},
                   {"train_loss", r.final_train_loss},
                   {"heldout_ppl", r.heldout_ppl},
                   {"random_init_heldout_ppl", r.random_heldout_ppl},
                   {"routing_trained", js(trained)},
                   {"routing_random_init", js(random)}});
  return 0;
}

}  // namespace

MoeSubcommand add_pretrain_command(CLI::App& moe) {
  auto flags = std::make_shared<PretrainFlags>();
  auto& f = *flags;
  PretrainOptions& pre = f.pre;
  auto* pt = moe.add_subcommand("pretrain", "train a small MoE on text so its routers are learned");
  pt->add_option("--corpus", pre.corpus, "text file or folder of *.py (default: the Python standard library)");
  pt->add_option("--out", pre.out_dir, "model directory to write")->required();
  pt->add_option("--steps", pre.steps, "optimizer steps")->capture_default_str();
  pt->add_option("--batch", pre.batch, "sequences per step")->capture_default_str();
  pt->add_option("--seq-len", pre.seq_len, "tokens per sequence")->capture_default_str();
  pt->add_option("--lr", pre.lr, "peak learning rate")->capture_default_str();
  pt->add_option("--max-minutes", pre.max_minutes, "stop training after this long")->capture_default_str();
  pt->add_option("--threads", f.threads, "libtorch threads")->check(thread_count())->capture_default_str();
  pt->add_option("--dtype", f.dtype, "checkpoint dtype")->capture_default_str();
  pt->add_option("--seed", pre.seed, "seed")->capture_default_str();
  add_shape_flags(*pt, pre.config);
  return MoeSubcommand{pt, [flags] { return run_pretrain(flags->pre, flags->threads, flags->dtype); }};
}

}  // namespace ferry::apps
