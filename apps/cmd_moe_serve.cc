// `ferry moe serve`: an OpenAI-compatible HTTP server over the offloading engine, with continuous
// batching (src/moe/serve/server.h, docs/serve.md). Prints "listening on http://HOST:PORT" once it
// accepts requests; SIGTERM or SIGINT drains and exits 0.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include "apps/cli.h"
#include "apps/engine_flags.h"
#include "apps/wait_policy.h"
#include "apps/moe_subcommands.h"
#include "core/error.h"
#include "core/units.h"
#include "moe/engine/bench.h"
#include "core/corpus.h"
#include "moe/model/family.h"
#include "moe/sched/policy.h"
#include "moe/serve/server.h"
#include "moe/tokenizer/chat_template.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::apps {
namespace {

using namespace ferry::moe;

struct ServeFlags {
  std::string model;
  EngineOptions engine = [] {
    EngineOptions e;
    e.policy = "auto";      // lru when every expert is resident, else prescope
    e.device_mem = "auto";  // every expert resident when the model fits in memory, else what fits
    e.link = "auto";
    e.compute = "auto";
    return e;
  }();
  std::string calibration = "default";  // corpus of the static placements' routing counts
  std::string chat_template;            // "" = the family's
  std::string kv_mem = "auto";          // KV cache bound of the running sequences (bytes; 0: none; auto: EngineOptions::kv_mem)
  ServeOptions serve = [] {
    ServeOptions o;
    o.batcher.prefix_cache = 32;    // on by default, as llama.cpp's cache_prompt
    // A CPU step reads every weight it touches once, whatever its tokens: big steps amortise that.
    // 64 sequences, and prompts in chunks of 512 tokens (llama.cpp's default micro-batch).
    o.batcher.max_batch = 64;
    o.batcher.prefill_chunk = 512;
    return o;
  }();
  int threads = 1;
};

int run_serve(ServeFlags& f) {
  EngineOptions& eo = f.engine;
  eo.kv_mem = f.kv_mem;
  eo.max_sequences = f.serve.batcher.max_batch;
  eo.max_step_tokens = f.serve.batcher.prefill_chunk + f.serve.batcher.max_batch;
  prefer_passive_wait(streams_from_disk(f.model, eo));
  // Steps run on the batcher's thread with --threads; loading here computes on one thread, so that
  // only the batcher's thread keeps a team of OpenMP workers (BatcherOptions::threads).
  at::set_num_threads(1);
  f.serve.batcher.threads = f.threads;
  // Signals go to one thread that waits for them, so that the server's threads never see one.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  if (eo.policy != "auto" && policy_entry(eo.policy).uses_counts) {
    const std::string corpus = f.calibration == "default" ? default_corpus_path() : f.calibration;
    eo.policy_inputs.expert_counts = calibration_counts(f.model, corpus, 512, 99, eo);
  }
  auto engine = MoeEngine::open(f.model, eo);
  f.serve.batcher.kv_bytes = engine->kv_reserve_bytes();
  const MoeConfig& c = engine->config();
  auto tokenizer = load_tokenizer(f.model, c.tokenizer, c.vocab_size);
  ServeOptions& o = f.serve;
  if (o.model_name.empty()) o.model_name = std::filesystem::path(f.model).lexically_normal().filename().string();
  if (o.model_name.empty()) o.model_name = "ferry";
  o.chat_template = f.chat_template.empty() ? default_chat_template(c.declared_model_type()) : f.chat_template;
  o.eos_ids = read_eos_ids(f.model, c.vocab_size);
  MoeServer server(*engine, *tokenizer, o);
  const int port = server.bind();
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "ferry moe serve: signal %d, draining (up to %gs)\n", sig, o.drain_s);
    server.shutdown();
  });
  std::printf("%s\nchat template %s, max batch %d, queue %d, prefill chunk %d, max tokens %d, KV bound %s, prefix cache %d\n"
              "listening on http://%s:%d\n",
              engine->describe().c_str(), o.chat_template.c_str(), o.batcher.max_batch, o.batcher.max_queue,
              o.batcher.prefill_chunk, o.max_tokens,
              o.batcher.kv_bytes ? format_bytes(static_cast<double>(o.batcher.kv_bytes)).c_str() : "none",
              o.batcher.prefix_cache, o.host.c_str(), port);
  std::fflush(stdout);
  server.run();
  pthread_kill(signals.native_handle(), SIGTERM);  // ends the signal thread when run() ended otherwise
  signals.join();
  const auto st = engine->stats();
  std::printf("stopped: %llu tokens, hit rate %.3f, %llu bytes moved\n", static_cast<unsigned long long>(st.tokens),
              st.hit_rate(), static_cast<unsigned long long>(st.store.bytes_moved));
  return 0;
}

}  // namespace

MoeSubcommand add_serve_command(CLI::App& moe) {
  auto flags = std::make_shared<ServeFlags>();
  auto& f = *flags;
  auto* c = moe.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat) with continuous batching");
  c->footer(kWaitPolicyHelp);
  c->add_option("--model", f.model, "model directory or GGUF file")->required();
  add_engine_flags(*c, f.engine);
  c->add_option("--host", f.serve.host, "address to listen on (loopback by default)")->capture_default_str();
  c->add_option("--port", f.serve.port, "TCP port (0 = any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  c->add_option("--max-batch", f.serve.batcher.max_batch, "sequences decoded together")->check(CLI::Range(1, 4096))
      ->capture_default_str();
  c->add_option("--max-queue", f.serve.batcher.max_queue, "requests waiting for a slot before 429")
      ->check(CLI::Range(0, 1 << 16))->capture_default_str();
  c->add_option("--prefill-chunk", f.serve.batcher.prefill_chunk, "prompt tokens per step (bounds a decode's stall)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  c->add_option("--kv-mem", f.kv_mem, "KV cache memory of the running sequences together (512MiB; 0: no bound; auto: "
                                      "--max-batch full contexts, at most 1/8 of the memory this process may use); "
                                      "a request waits until its cache fits, one larger alone gets 400")
      ->check([](const std::string& text) -> std::string {
        try {
          if (text != "auto") parse_bytes(text);
          return "";
        } catch (const std::exception& e) {
          return e.what();
        }
      })
      ->capture_default_str();
  c->add_option("--prefix-cache", f.serve.batcher.prefix_cache,
                "finished sequences whose KV caches are kept so that a prompt sharing a prefix with one prefills only "
                "the rest (a request's cache_prompt: false opts out; 0: off)")
      ->check(CLI::Range(0, 1 << 16))->capture_default_str();
  c->add_option("--max-tokens", f.serve.max_tokens, "most tokens a request may ask for")->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  c->add_option("--max-body", f.serve.max_body_bytes, "largest request body in bytes (413 above)")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 30))->capture_default_str();
  c->add_option("--api-key", f.serve.api_key, "require 'Authorization: Bearer KEY' on /v1 routes");
  c->add_option("--model-name", f.serve.model_name, "model id in the API (default: the directory's name)");
  c->add_option("--chat-template", f.chat_template, "chat template: " + choices(chat_template_names()) +
                                                        " (default: the model family's)");
  c->add_option("--calibration", f.calibration, "text for static-hot/fiddler routing counts ('default' = Python stdlib)")
      ->capture_default_str();
  c->add_option("--drain", f.serve.drain_s, "seconds running requests may finish after SIGTERM")
      ->check(CLI::Range(0.0, 3600.0))->capture_default_str();
  c->add_option("--threads", f.threads, "libtorch threads")->check(thread_count())->capture_default_str();
  return MoeSubcommand{c, [flags] { return run_serve(*flags); }};
}

}  // namespace ferry::apps
