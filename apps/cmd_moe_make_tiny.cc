// `ferry moe make-tiny`: a random-weight model of a Hugging Face MoE family, in its layout and
// tensor names, for tests and demos; with --gguf TYPE, written directly as a GGUF file of that
// llama-quantize file type (moe/model/random_gguf.h), at any size; with --mxfp4-experts, gpt-oss's
// experts in MXFP4 as its released checkpoints store them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/gguf_flags.h"
#include "apps/model_flags.h"
#include "apps/moe_subcommands.h"
#include "core/error.h"
#include "core/units.h"
#include "moe/model/config.h"
#include "moe/model/dtype.h"
#include "moe/model/family.h"
#include "moe/model/pretrain.h"
#include "moe/model/random_gguf.h"
#include "moe/model/tiny_model.h"

namespace ferry::apps {
namespace {

using namespace ferry::moe;

struct MakeTinyFlags {
  TinyModelOptions tiny = [] {
    TinyModelOptions t;
    t.config = pretrain_default_config();
    t.config.n_group = t.config.topk_group = 0;  // the family's default unless given
    return t;
  }();
  std::string out, dtype = "f32";
  std::string gguf;  // --gguf TYPE; empty: a safetensors checkpoint
  bool pure = false;
  int threads = 0;
  // --dtype, --shards and --mxfp4-experts, to ask whether they were given (refused with --gguf);
  // owned by the subcommand's CLI::App, which lives as long as the program.
  const CLI::Option* dtype_option = nullptr;
  const CLI::Option* shards_option = nullptr;
  const CLI::Option* mxfp4_option = nullptr;
};

int run_make_tiny_gguf(const MakeTinyFlags& f) {
  FERRY_REQUIRE(f.dtype_option->count() == 0 && f.shards_option->count() == 0 && f.mxfp4_option->count() == 0,
                "--gguf writes one GGUF file: --dtype, --shards and --mxfp4-experts are for a safetensors checkpoint ",
                "(--gguf MXFP4_MOE writes the experts in MXFP4)");
  FERRY_REQUIRE(f.threads >= 0, "--threads ", f.threads, ": expected 0 (one per core) or more");
  RandomGgufOptions o;
  o.config = f.tiny.config;
  prepare_tiny_config(o.config);
  o.seed = f.tiny.seed;
  o.gguf.file_type = file_type_flag("--gguf", f.gguf);
  o.gguf.pure = f.pure;
  o.gguf.threads = f.threads;
  const auto start = std::chrono::steady_clock::now();
  const GgufExportReport r = write_random_gguf(f.out, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_gguf_report(r, f.out, f.pure, /*table=*/false);
  std::printf("written in %.1f s (%s/s)\n", seconds,
              format_bytes(static_cast<double>(r.file_bytes) / std::max(seconds, 1e-9)).c_str());
  return 0;
}

int run_make_tiny(TinyModelOptions& o, const std::string& out, const std::string& dtype) {
  o.write.dtype = dtype_flag(dtype);
  FERRY_REQUIRE(!o.config.mxfp4_experts || family_of(o.config.model_type).tensors.fused_experts,
                "--mxfp4-experts writes the experts as gpt-oss's checkpoints store them (fused, in MXFP4): not for "
                "--family ", o.config.model_type);
  prepare_tiny_config(o.config);
  make_tiny_model(out, o);
  auto w = load_config(out);
  // An expert's weights as written: MXFP4 blocks (17 bytes per 32 weights) or the --dtype's values.
  const double per_weight = o.config.mxfp4_experts ? 17.0 / 32.0 : static_cast<double>(dtype_size(o.write.dtype));
  const double expert = static_cast<double>(w.expert_params()) * per_weight;
  std::printf("wrote %s: %s, %d layers (%d with experts) x %d experts (top-%d), hidden %d, expert %s, all experts %s\n",
              out.c_str(), w.model_type.c_str(), w.num_layers, w.num_moe_layers(), w.num_experts, w.top_k,
              w.hidden_size, format_bytes(expert).c_str(),
              format_bytes(expert * w.num_moe_layers() * w.num_experts).c_str());
  return 0;
}

}  // namespace

MoeSubcommand add_make_tiny_command(CLI::App& moe) {
  auto flags = std::make_shared<MakeTinyFlags>();
  auto& f = *flags;
  MoeConfig& c = f.tiny.config;
  auto* mk = moe.add_subcommand("make-tiny", "write a random-weight model of a Hugging Face MoE family");
  mk->add_option("--out", f.out, "model directory to write (with --gguf: the GGUF file)")->required();
  add_shape_flags(*mk, c);
  mk->add_option("--vocab", c.vocab_size, "vocabulary (256 = byte tokens)")->capture_default_str();
  std::string families;
  for (const std::string& name : model_family_names()) families += (families.empty() ? "" : ", ") + name;
  mk->add_option("--family", c.model_type, families + " (Hugging Face's layout and names)")->capture_default_str();
  mk->add_option("--shared-expert", c.shared_expert_intermediate_size,
                 "width of the shared expert (0 = none; qwen2_moe; deepseek: a multiple of --intermediate)");
  mk->add_option("--dense-layers", c.dense_layers,
                 "decoder layers with a dense MLP instead of experts (qwen2_moe, qwen3_moe; deepseek: the first ones)")
      ->delimiter(',');
  mk->add_option("--kv-lora-rank", c.kv_lora_rank,
                 "deepseek_v3: the rank of the latent keys and values (0 = half of --hidden)")
      ->capture_default_str();
  mk->add_option("--q-lora-rank", c.q_lora_rank,
                 "deepseek_v3: the rank of the queries' bottleneck (0 = none, as DeepSeek-V2-Lite)")
      ->capture_default_str();
  mk->add_option("--v-head-dim", c.v_head_dim, "deepseek_v3: each head's value width (0 = --head-dim)")
      ->capture_default_str();
  mk->add_option("--rope-dim", c.rotary_dim,
                 "glm4_moe, deepseek_v3: the rotary dims of each q/k head (0 = half of --head-dim)")
      ->capture_default_str();
  mk->add_option("--expert-groups", c.n_group,
                 "glm4_moe, deepseek_v3: the experts' groups (0 = 2 where --top-k fits in half the experts, else 1)")
      ->capture_default_str();
  mk->add_option("--groups-used", c.topk_group, "glm4_moe, deepseek_v3: the groups a token chooses in (0 = 1)")
      ->capture_default_str();
  mk->add_option("--sliding-window", c.sliding_window,
                 "gpt_oss: the positions its sliding layers (every other one) attend to (0 = 8)")
      ->capture_default_str();
  mk->add_option("--dense-intermediate", c.dense_intermediate_size,
                 "the dense layers' MLP width (default 2 x --intermediate)");
  f.dtype_option = mk->add_option("--dtype", f.dtype, "f32, bf16 or f16")->capture_default_str();
  f.shards_option = mk->add_option("--shards", f.tiny.write.shards, "safetensors shards")->capture_default_str();
  f.mxfp4_option = mk->add_flag("--mxfp4-experts", c.mxfp4_experts,
                                "gpt_oss: the experts in MXFP4 as the released checkpoints store them (*_blocks and "
                                "*_scales, quantization_config mxfp4), quantized from the random weights; the rest "
                                "in --dtype. --hidden and --intermediate multiples of 32");
  mk->add_option("--seed", f.tiny.seed, "weight seed")->capture_default_str();
  mk->add_option("--gguf", f.gguf,
                 std::string("write one GGUF file of this llama-quantize file type instead of a checkpoint: ") +
                     quant::llama_file_type_names() + " (the tensors, types and metadata `ferry moe quantize --type` " +
                     "writes; --vocab > 256: a SentencePiece-style vocabulary)");
  mk->add_flag("--pure", f.pure, "with --gguf: every quantized tensor in the type itself (llama-quantize --pure)");
  mk->add_option("--threads", f.threads, "with --gguf: filling threads (0 = one per core)")->capture_default_str();
  return MoeSubcommand{mk, [flags] {
                         if (!flags->gguf.empty()) return run_make_tiny_gguf(*flags);
                         FERRY_REQUIRE(!flags->pure && flags->threads == 0, "--pure and --threads need --gguf");
                         return run_make_tiny(flags->tiny, flags->out, flags->dtype);
                       }};
}

}  // namespace ferry::apps
