// `ferry moe serve`: OpenAI's completions and chat completions API over the offloading engine, on
// cpp-httplib (Debian's libcpp-httplib-dev: a maintained, dependency-free HTTP/1.1 server with a
// thread pool, chunked streaming and body limits; enough for a loopback inference server, where
// an event-loop stack such as Boost.Beast would add code, not speed). Each request becomes a job
// of the ContinuousBatcher; its HTTP thread waits for the job's text (or streams it as server-sent
// events). Routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health,
// GET /metrics. See docs/serve.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "moe/engine/continuous_batcher.h"
#include "moe/engine/engine.h"
#include "moe/serve/server_metrics.h"
#include "moe/tokenizer/tokenizer.h"

namespace httplib { class Server; }

namespace ferry::moe {

struct ServeOptions {
  std::string host = "127.0.0.1";        // loopback unless asked otherwise
  int port = 8000;                       // 0: a free port (bind() says which)
  std::string model_name;                // the id in /v1/models and responses; a request naming another is refused
  std::string api_key;                   // non-empty: every /v1 request needs "Authorization: Bearer KEY"
  int max_tokens = 512;                  // the most tokens one request may ask for
  std::size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  std::string chat_template = "none";    // a chat_template() name; "none": chat completions refused
  std::vector<std::int32_t> eos_ids;     // end-of-sequence tokens (finish "stop" unless ignore_eos)
  double drain_s = 10;                   // shutdown: running requests may finish for this long, then are cancelled
  BatcherOptions batcher;
};

class MoeServer {
 public:
  // `engine` and `tokenizer` outlive the server. Throws InvalidArgument for bad options.
  MoeServer(MoeEngine& engine, const Tokenizer& tokenizer, ServeOptions options);
  ~MoeServer();
  // Binds host:port; returns the port. Throws IoError naming the address when it cannot.
  int bind();
  // Serves until shutdown(); starts the batcher. Returns once every request has been answered.
  void run();
  // Thread-safe, idempotent (a signal thread calls it): new requests get 503, running ones may
  // finish for drain_s, then are cancelled; then run() returns.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The end-of-sequence ids of a model directory: eos_token_id of generation_config.json, else of
// config.json (a number or a list); none when neither says. Of a GGUF file: its tokenizer's
// eos, eot and eom token ids (as llama.cpp stops at them). FormatError naming the file and the key
// for an id outside [0, vocab_size) (it would never be generated: no stop, silently).
std::vector<std::int32_t> read_eos_ids(const std::string& model_dir, int vocab_size);

}  // namespace ferry::moe
