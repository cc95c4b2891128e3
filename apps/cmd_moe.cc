// `ferry moe <make-tiny|pretrain|generate|bench|trace|demo|simulate|serve>`: MoE inference with expert offloading.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "apps/cli.h"
#include "apps/moe_subcommands.h"
#include "apps/render_plots.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "core/units.h"
#include "moe/engine/bench.h"
#include "moe/engine/engine.h"
#include "moe/engine/generate.h"
#include "moe/engine/trace_recorder.h"
#include "core/corpus.h"
#include "moe/model/family.h"
#include "moe/model/pretrain.h"
#include "moe/model/tiny_model.h"
#include "moe/model/tokenizer.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sched/policy.h"
#include "moe/sim/simulate.h"
#include "moe/sim/time_model.h"
#include "moe/trace/routing_stats.h"

namespace ferry::apps {

using namespace ferry::moe;
namespace fs = std::filesystem;

namespace {

DType dtype_flag(const std::string& s) {
  auto d = parse_dtype(s);
  if (!d) FERRY_THROW(InvalidArgument, "invalid --dtype '", s, "': expected f32, bf16 or f16");
  return *d;
}

void add_shape_flags(CLI::App* app, MoeConfig& c) {
  app->add_option("--layers", c.num_layers, "decoder layers")->capture_default_str();
  app->add_option("--experts", c.num_experts, "routed experts per layer")->capture_default_str();
  app->add_option("--top-k", c.top_k, "experts per token")->capture_default_str();
  app->add_option("--hidden", c.hidden_size, "model width")->capture_default_str();
  app->add_option("--intermediate", c.intermediate_size, "expert FFN width")->capture_default_str();
  app->add_option("--heads", c.num_heads, "attention heads")->capture_default_str();
  app->add_option("--kv-heads", c.num_kv_heads, "key/value heads")->capture_default_str();
  app->add_option("--head-dim", c.head_dim, "per-head width")->capture_default_str();
  app->add_option("--max-pos", c.max_position_embeddings, "longest sequence")->capture_default_str();
}

// The held-out tail of a corpus as `n` sequences of `len` byte tokens (tokenised by the model).
std::vector<std::vector<std::int32_t>> corpus_sequences(const std::string& model_dir, const std::string& corpus, int n,
                                                        int len, bool tail) {
  MoeConfig c = load_config(model_dir);
  auto tok = load_tokenizer(model_dir, c.tokenizer, c.vocab_size);
  CorpusOptions co;
  co.max_bytes = 6u << 20;
  auto ids = tok->encode(read_corpus(corpus, co));
  const std::size_t need = static_cast<std::size_t>(n) * len;
  FERRY_REQUIRE(ids.size() >= need, "corpus '", corpus, "' has ", ids.size(), " tokens, need ", need);
  const std::size_t from = tail ? ids.size() - need : 0;
  std::vector<std::vector<std::int32_t>> out;
  for (int i = 0; i < n; ++i) out.emplace_back(ids.begin() + from + i * len, ids.begin() + from + (i + 1) * len);
  return out;
}

int run_make_tiny(CLI::App& app, TinyModelOptions& o, std::string& out, std::string& dtype) {
  o.write.dtype = dtype_flag(dtype);
  prepare_tiny_config(o.config);
  make_tiny_model(out, o);
  auto w = load_config(out);
  std::printf("wrote %s: %s, %d layers (%d with experts) x %d experts (top-%d), hidden %d, expert %s, all experts %s\n",
              out.c_str(), w.model_type.c_str(), w.num_layers, w.num_moe_layers(), w.num_experts, w.top_k,
              w.hidden_size, format_bytes(w.expert_params() * 4.0).c_str(),
              format_bytes(w.expert_params() * 4.0 * w.num_moe_layers() * w.num_experts).c_str());
  return 0;
}

int run_pretrain(PretrainOptions& o, int threads, std::string& dtype) {
  torch::set_num_threads(threads);
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

struct GenerateFlags {
  // --compute a100 as in `ferry moe bench` (docs/moe.md, "Compute profile").
  std::string model, prompt = "def ", policy = "lru", device_mem = "50%", link = "pcie4", compute = "a100";
  // Seeded sampling by default: greedy decoding of a tiny model falls into repetition loops.
  int tokens = 64, top_k = 20, threads = 1;
  double temperature = 0.8;
  std::uint64_t seed = 1;
};

int run_generate(const GenerateFlags& f) {
  torch::set_num_threads(f.threads);
  EngineOptions eo;
  eo.policy = f.policy;
  eo.device_mem = f.device_mem;
  eo.link = f.link;
  eo.compute = f.compute;
  auto eng = MoeEngine::open(f.model, eo);
  auto tok = load_tokenizer(f.model, eng->config().tokenizer, eng->config().vocab_size);
  auto ids = tok->encode(f.prompt);
  if (tok->bos_id() >= 0) ids.insert(ids.begin(), tok->bos_id());
  FERRY_REQUIRE(!ids.empty(), "--prompt is empty");
  SamplingOptions so;
  so.max_new_tokens = f.tokens;
  so.temperature = f.temperature;
  so.top_k = f.top_k;
  so.seed = f.seed;
  auto g = generate(*eng, {ids}, so);
  // The generated bytes as they are: a byte-level model may produce NUL (printf("%s") stopped there).
  const std::string text = f.prompt + tok->decode(g.new_tokens[0]) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  auto s = eng->stats();
  std::fprintf(stderr,
               "[%s] %.1f tokens/s, TPOT %.2f ms, TTFT %.1f ms, hit rate %.3f, moved %s, io_wait %.1f%%, host execs "
               "%llu, device peak %s / budget %s\n",
               eng->describe().c_str(), g.tokens_per_s(), g.tpot_s() * 1e3, g.ttft_s * 1e3, s.hit_rate(),
               format_bytes(static_cast<double>(s.store.bytes_moved)).c_str(),
               100 * s.store.io_wait_s / std::max(1e-12, g.ttft_s + g.decode_s),
               static_cast<unsigned long long>(s.host_execs),
               format_bytes(static_cast<double>(s.store.peak_bytes)).c_str(),
               format_bytes(static_cast<double>(s.budget_bytes)).c_str());
  return 0;
}

std::string bench_header(const BenchOptions& o) {
  EngineOptions eo;
  eo.device_mem = o.budgets.front();
  eo.link = o.link;
  eo.compute = o.compute;
  eo.policy = o.policies.front().substr(0, o.policies.front().find(':'));  // "prescope:PREDICTOR" -> prescope
  auto eng = MoeEngine::open(o.model_dir, eo);
  return "ferry moe bench on " + o.model_dir + ": " + eng->describe() + "; prompt " + std::to_string(o.prompt_tokens) +
         " tokens, " + std::to_string(o.new_tokens) + " generated";
}

int run_bench_cmd(BenchOptions& o, const std::string& out, int threads, bool overhead) {
  torch::set_num_threads(threads);
  if (o.corpus == "default") o.corpus = default_corpus_path();
  const std::string header = bench_header(o);
  std::printf("%s\n", header.c_str());
  ProgressOptions po;
  po.label = "bench";
  po.unit = "run";
  Progress bar(static_cast<std::int64_t>(o.policies.size() * o.batches.size() * o.budgets.size()), po);
  auto rows = run_bench(o, [&](const BenchRow& r, int done, int) {
    char s[128];
    std::snprintf(s, sizeof s, "%s b%d %s: %.1f tok/s", r.policy.c_str(), r.batch, r.budget.c_str(), r.tokens_per_s);
    bar.update(done, s);
  });
  bar.finish();
  render_plots(write_bench_outputs(rows, out, header), "ferry moe bench");
  std::printf("\n%s\n", bench_markdown(rows).c_str());
  if (overhead) {
    nlohmann::json j = nlohmann::json::array();
    std::string md = "\nEngine cost, every expert resident, unpaced (best of 3):\n\n| batch | engine tok/s | reference tok/s | ratio |\n|---|---|---|---|\n";
    for (int b : o.batches) {
      auto r = measure_overhead(o.model_dir, b, o.prompt_tokens, o.new_tokens, 3, o.corpus);
      char line[160];
      std::snprintf(line, sizeof line, "| %d | %.1f | %.1f | %.3f |\n", b, r.engine_tokens_per_s, r.reference_tokens_per_s,
                    r.ratio());
      md += line;
      j.push_back({{"batch", b}, {"engine_tokens_per_s", r.engine_tokens_per_s},
                   {"reference_tokens_per_s", r.reference_tokens_per_s}, {"ratio", r.ratio()}});
    }
    std::printf("%s\n", md.c_str());
    write_json_file((fs::path(out) / "overhead.json").string(), j);
    std::ofstream(fs::path(out) / "bench.md", std::ios::app) << md;
  }
  std::printf("wrote %s/bench.csv, bench.md, bench.png\n", out.c_str());
  return 0;
}

// The profiles of the profiles file this ferry finds, for --help.
std::string profile_choices() {
  try {
    std::vector<std::string> names;
    for (const auto& p : builtin_hardware_profiles()) names.push_back(p.name);
    return choices(names);
  } catch (const std::exception&) {
    return "(the profiles of --profiles)";
  }
}

}  // namespace

int run_moe(int argc, char** argv) {
  register_builtin_policies();
  register_builtin_predictors();
  CLI::App app{"MoE inference with expert offloading (Mixtral family, safetensors)", "ferry moe"};
  init_app(app);
  app.require_subcommand(1);

  // make-tiny
  auto* mk = app.add_subcommand("make-tiny", "write a random-weight model of a Hugging Face MoE family");
  TinyModelOptions tiny;
  tiny.config = pretrain_default_config();
  std::string mk_out, mk_dtype = "f32";
  mk->add_option("--out", mk_out, "model directory to write")->required();
  add_shape_flags(mk, tiny.config);
  mk->add_option("--vocab", tiny.config.vocab_size, "vocabulary (256 = byte tokens)")->capture_default_str();
  std::string families;
  for (const std::string& name : model_family_names()) families += (families.empty() ? "" : ", ") + name;
  mk->add_option("--family", tiny.config.model_type, families + " (Hugging Face's layout and names)")
      ->capture_default_str();
  mk->add_option("--shared-expert", tiny.config.shared_expert_intermediate_size,
                 "width of the shared expert (0 = none; qwen2_moe; deepseek: a multiple of --intermediate)");
  mk->add_option("--dense-layers", tiny.config.dense_layers,
                 "decoder layers with a dense MLP instead of experts (qwen2_moe, qwen3_moe; deepseek: the first ones)")
      ->delimiter(',');
  mk->add_option("--dense-intermediate", tiny.config.dense_intermediate_size,
                 "the dense layers' MLP width (default 2 x --intermediate)");
  mk->add_option("--dtype", mk_dtype, "f32, bf16 or f16")->capture_default_str();
  mk->add_option("--shards", tiny.write.shards, "safetensors shards")->capture_default_str();
  mk->add_option("--seed", tiny.seed, "weight seed")->capture_default_str();

  // pretrain
  auto* pt = app.add_subcommand("pretrain", "train a small MoE on text so its routers are learned");
  PretrainOptions pre;
  int pt_threads = 1;  // one thread trains faster than two on a shared 2-core machine
  std::string pt_dtype = "f32";
  pt->add_option("--corpus", pre.corpus, "text file or folder of *.py (default: the Python standard library)");
  pt->add_option("--out", pre.out_dir, "model directory to write")->required();
  pt->add_option("--steps", pre.steps, "optimizer steps")->capture_default_str();
  pt->add_option("--batch", pre.batch, "sequences per step")->capture_default_str();
  pt->add_option("--seq-len", pre.seq_len, "tokens per sequence")->capture_default_str();
  pt->add_option("--lr", pre.lr, "peak learning rate")->capture_default_str();
  pt->add_option("--max-minutes", pre.max_minutes, "stop training after this long")->capture_default_str();
  pt->add_option("--threads", pt_threads, "libtorch threads")->check(thread_count())->capture_default_str();
  pt->add_option("--dtype", pt_dtype, "checkpoint dtype")->capture_default_str();
  pt->add_option("--seed", pre.seed, "seed")->capture_default_str();
  add_shape_flags(pt, pre.config);

  // generate
  auto* gen = app.add_subcommand("generate", "generate text with experts offloaded under a device budget");
  GenerateFlags gf;
  gen->add_option("--model", gf.model, "model directory")->required();
  gen->add_option("--prompt", gf.prompt, "prompt text")->capture_default_str();
  gen->add_option("--policy", gf.policy, "offloading policy: " + choices(policy_names()))->capture_default_str();
  gen->add_option("--device-mem", gf.device_mem, "device budget for experts: bytes (256MiB) or % of all experts")
      ->capture_default_str();
  gen->add_option("--link", gf.link, "pcie3, pcie4, BW,LAT (12GBps,10us), mixtral-a100, file, none")->capture_default_str();
  gen->add_option("--compute", gf.compute, "none, a100 or DEVICE,HOST_PER_TOKEN (100us,1ms)")->capture_default_str();
  gen->add_option("--tokens", gf.tokens, "tokens to generate")->capture_default_str();
  gen->add_option("--temperature", gf.temperature, "0 = greedy")->check(finite_at_least(0))->capture_default_str();
  gen->add_option("--top-k", gf.top_k, "sample among the k most likely (0 = all)")->check(CLI::Range(0, 1 << 20))->capture_default_str();
  gen->add_option("--seed", gf.seed, "sampling seed")->capture_default_str();
  gen->add_option("--threads", gf.threads, "libtorch threads")->check(thread_count())->capture_default_str();

  // bench
  auto* bn = app.add_subcommand("bench", "compare policies x batches x budgets; bench.csv, bench.md, bench.png");
  BenchOptions bo;
  bo.corpus = "default";
  std::string bn_out;
  int bn_threads = 1;
  bool bn_overhead = false;
  bn->add_option("--model", bo.model_dir, "model directory")->required();
  bn->add_option("--policies", bo.policies, "comma-separated policies: " + choices(policy_names()))->delimiter(',')->capture_default_str();
  bn->add_option("--batch", bo.batches, "comma-separated batch sizes")->delimiter(',')->capture_default_str();
  bn->add_option("--device-mem", bo.budgets, "comma-separated budgets (25%,50% or bytes)")->delimiter(',')
      ->capture_default_str();
  bn->add_option("--tokens", bo.new_tokens, "generated tokens per sequence")->capture_default_str();
  bn->add_option("--prompt-tokens", bo.prompt_tokens, "prompt tokens per sequence")->capture_default_str();
  bn->add_option("--link", bo.link, "link (mixtral-a100 = the Mixtral/A100 transfer:compute ratio)")->capture_default_str();
  bn->add_option("--compute", bo.compute, "compute profile")->capture_default_str();
  bn->add_option("--corpus", bo.corpus, "prompt text: file or folder ('default' = Python stdlib, '' = random)")
      ->capture_default_str();
  bn->add_option("--lru-scope", bo.lru_scope, "global or layer")->capture_default_str();
  bn->add_option("--out", bn_out, "output directory")->required();
  bn->add_option("--threads", bn_threads, "libtorch threads")->check(thread_count())->capture_default_str();
  bn->add_flag("--overhead", bn_overhead, "also measure all-resident engine vs the reference forward");

  // trace
  auto* tr = app.add_subcommand("trace", "record routing per token and layer (JSONL + hidden states)");
  std::string tr_model, tr_corpus, tr_out, tr_dataset = "ferry";
  int tr_seqs = 16, tr_len = 256;
  bool tr_no_hidden = false;
  tr->add_option("--model", tr_model, "model directory")->required();
  tr->add_option("--corpus", tr_corpus, "text file or folder (default: the Python standard library)");
  tr->add_option("--out", tr_out, "JSONL file to write (hidden states go to FILE.hidden.bin)")->required();
  tr->add_option("--sequences", tr_seqs, "sequences to trace")->capture_default_str();
  tr->add_option("--tokens", tr_len, "tokens per sequence")->capture_default_str();
  tr->add_option("--dataset", tr_dataset, "the rows' dataset field")->capture_default_str();
  tr->add_flag("--no-hidden", tr_no_hidden, "skip the hidden-state side file");

  // fit-predictor (apps/cmd_moe_predict.cc), logits (apps/cmd_moe_logits.cc), serve (apps/cmd_moe_serve.cc)
  auto fit_predictor = add_fit_predictor_command(app);
  auto logits = add_logits_command(app);
  auto serve = add_serve_command(app);

  // demo
  auto* dm = app.add_subcommand("demo", "a short offloading comparison of the policies on a tiny model (~1 min)");
  std::string dm_dir = "runs/moe-demo";
  dm->add_option("--dir", dm_dir, "where the tiny model and results go")->capture_default_str();

  // simulate
  auto* sm = app.add_subcommand("simulate", "trace-driven simulation of policies on modelled GPUs; simulate.csv, .md, .png");
  SimulateOptions so;
  std::string sm_out;
  sm->add_option("--trace", so.trace, "routing trace (Mixtral JSONL, granite JSON, layer-0 JSONL)")->required();
  sm->add_option("--model-shape", so.model_shape, "model whose sizes the trace is simulated at: " + choices(model_shape_names()))->capture_default_str();
  sm->add_option("--profile", so.profiles, "comma-separated hardware profiles: " + profile_choices())
      ->delimiter(',')->capture_default_str();
  sm->add_option("--profiles", so.profiles_file, "profiles file (default: the profiles built in, from src/moe/sim/profiles.json)");
  sm->add_option("--device-mem", so.device_mem, "GPU memory for the model, e.g. 24GiB (default: the profile's)");
  sm->add_option("--batch", so.batches, "comma-separated batch sizes")->delimiter(',')->capture_default_str();
  sm->add_option("--policies", so.policies, "comma-separated policies: " + choices(trace_policy_names()))
      ->delimiter(',')->capture_default_str();
  sm->add_option("--predictor", so.predictor, "prescope's predictor spec NAME[:ARG]: " + choices(trace_predictor_names()))
      ->capture_default_str();
  sm->add_option("--window", so.window, "PreSched window in layers (0: auto, the layers one transfer lasts)")->capture_default_str();
  sm->add_option("--context", so.context_tokens, "KV-cache tokens per sequence")->capture_default_str();
  sm->add_option("--out", sm_out, "output directory")->required();

  // `ferry moe` alone or with an unknown word: one line listing the commands.
  std::vector<std::string> names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
    known |= argc >= 2 && sub->check_name(argv[1]);
  }
  if (argc < 2 || (argv[1][0] != '-' && !known)) {
    FERRY_THROW(InvalidArgument, argc < 2 ? std::string("ferry moe needs a command")
                                          : "unknown command 'moe " + std::string(argv[1]) + "'",
                "; commands: ", choices(names), " (ferry moe COMMAND --help)");
  }
  parse_command_line(app, argc, argv);

  if (*mk) return run_make_tiny(app, tiny, mk_out, mk_dtype);
  if (*pt) return run_pretrain(pre, pt_threads, pt_dtype);
  if (*gen) return run_generate(gf);
  if (*bn) return run_bench_cmd(bo, bn_out, bn_threads, bn_overhead);
  if (*fit_predictor.app) return fit_predictor.run();
  if (*logits.app) return logits.run();
  if (*serve.app) return serve.run();
  if (*sm) {
    auto rows = run_simulate(so);
    std::string header = "ferry moe simulate: trace " + so.trace + ", model " + so.model_shape + ", " +
                         (so.device_mem.empty() ? std::string("the profile's GPU memory") : so.device_mem) +
                         ", PreSched window " + std::to_string(so.window) + ", prescope predictor " + so.predictor;
    render_plots(write_simulate_outputs(rows, sm_out, header), "ferry moe simulate");
    std::printf("%s\n\n%s\nwrote %s/simulate.csv, simulate.md, simulate.png\n", header.c_str(),
                simulate_markdown(rows).c_str(), sm_out.c_str());
    return 0;
  }
  if (*tr) {
    torch::set_num_threads(1);
    if (tr_corpus.empty()) tr_corpus = default_corpus_path();
    auto seqs = corpus_sequences(tr_model, tr_corpus, tr_seqs, tr_len, true);
    if (tr_no_hidden) {
      auto eng = MoeEngine::open(tr_model, EngineOptions{"lru", {}, "100%", "none", "none", 1u << 20, true});
      TraceRecorder rec(eng.get(), TraceRecorderOptions{tr_out, false, tr_dataset});
      for (const auto& s : seqs) rec.record_sequence(s);
      rec.finish();
      std::printf("wrote %llu rows to %s\n", static_cast<unsigned long long>(rec.rows()), tr_out.c_str());
      return 0;
    }
    auto t = record_routing(tr_model, seqs, tr_out, tr_dataset);
    std::printf("wrote %zu tokens x %d layers to %s (+ %s.hidden.bin)\n%s\n", t.tokens.size(), t.num_layers,
                tr_out.c_str(), tr_out.c_str(), format_routing_stats(routing_stats(t)).c_str());
    return 0;
  }
  if (*dm) {
    torch::set_num_threads(1);
    // Prefer the pretrained tiny model when it exists; otherwise a random-weight one.
    std::string model = "runs/moe-tiny";
    if (!fs::exists(fs::path(model) / "config.json")) {
      model = (fs::path(dm_dir) / "model").string();
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
    return run_bench_cmd(d, (fs::path(dm_dir) / "bench").string(), 1, false);
  }
  return 0;
}

}  // namespace ferry::apps
