#include "moe/serve/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/error.h"
#include "core/path_checks.h"
#include "moe/quant/gguf_file.h"
#include "moe/serve/openai_api.h"
#include "moe/serve/text_stream.h"
#include "moe/tokenizer/chat_template.h"

namespace ferry::moe {

using nlohmann::json;

std::vector<std::int32_t> read_eos_ids(const std::string& model_dir, int vocab_size) {
  if (std::filesystem::is_regular_file(model_dir)) {  // a GGUF file: its tokenizer's end tokens
    const quant::GgufFile file = quant::GgufFile::open(model_dir);
    std::vector<std::int32_t> ids;
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
      if (file.find(key) == nullptr) continue;
      const std::int64_t id = file.get_int(key);
      if (id < 0 || id >= vocab_size)
        FERRY_THROW(FormatError, model_dir, ": ", key, " ", id, " is outside the vocabulary of ", vocab_size, " tokens");
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(static_cast<std::int32_t>(id));
    }
    return ids;
  }
  for (const char* name : {"generation_config.json", "config.json"}) {
    const auto path = std::filesystem::path(model_dir) / name;
    if (file_kind(path.string()).empty()) continue;
    require_regular_file(path.string(), "model file");  // a FIFO would block the open below
    std::ifstream in(path);
    if (!in) continue;
    json j;
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      FERRY_THROW(FormatError, path.string(), ": not valid JSON: ", e.what());
    }
    if (!j.is_object() || !j.contains("eos_token_id") || j["eos_token_id"].is_null()) continue;
    const json& e = j["eos_token_id"];
    std::vector<std::int32_t> ids;
    for (const json& v : e.is_array() ? e : json::array({e})) {
      FERRY_REQUIRE(v.is_number_integer(), path.string(), ": eos_token_id must be an integer or a list of integers");
      const std::int64_t id = v.get<std::int64_t>();
      if (id < 0 || id >= vocab_size)
        FERRY_THROW(FormatError, path.string(), ": eos_token_id ", id, " is outside the vocabulary of ", vocab_size,
                    " tokens");
      ids.push_back(static_cast<std::int32_t>(id));
    }
    return ids;
  }
  return {};
}

namespace {

// One request's side of a job. The batcher's thread only appends token ids (and, when asked, their
// log-probabilities) under a lock; the request's HTTP thread turns them into text (TextStream:
// detokenisation and stop strings), so the decode loop never waits on text or on a client. A stop
// string found here ends the sequence at the batcher's next step (cancelled() turns true).
class RequestState : public GenerationSink {
 public:
  // `logprobs`: -1 none, else the alternatives per token (CompletionRequest::logprobs).
  RequestState(const Tokenizer& tok, std::vector<std::string> stops, int logprobs, int max_tokens, ServerMetrics* metrics)
      : tokenizer_(tok), text_(tok, std::move(stops)), logprobs_(logprobs), metrics_(metrics), t_submit_(now_s()) {
    ids_.reserve(static_cast<std::size_t>(max_tokens));
    if (logprobs_ >= 0) logprob_ids_.reserve(static_cast<std::size_t>(max_tokens));
  }

  // --- the batcher's thread ---
  void on_admitted(int cached_tokens) override {
    std::lock_guard lock(mu_);
    cached_ = cached_tokens;
    t_admit_ = now_s();
  }
  bool on_token(std::int32_t token, std::span<const float> logits) override {
    const double t = now_s();
    std::lock_guard lock(mu_);
    if (logprobs_ >= 0) record_logprob(token, logits);
    ids_.push_back(token);
    if (ids_.size() == 1) {
      t_first_ = t;
      metrics_->first_token(t - t_submit_);
    }
    t_last_ = t;
    cv_.notify_all();
    return !stopped_;
  }
  void on_finish(FinishReason reason, const std::string& error) override {
    std::lock_guard lock(mu_);
    done_ = true;
    reason_ = reason;
    error_ = error;
    if (ids_.size() > 1) metrics_->finished((t_last_ - t_first_) / static_cast<double>(ids_.size() - 1));
    cv_.notify_all();
  }
  bool cancelled() const override {
    std::lock_guard lock(mu_);
    return gone_ || stopped_;
  }

  // --- the request's HTTP thread ---
  void client_gone() {
    std::lock_guard lock(mu_);
    gone_ = true;
  }
  // Waits for new tokens or the end; returns the text that became safe to send. `done` tells
  // whether the request is over (the batcher finished it, or a stop string ended it).
  std::string next(bool& done) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return done_ || taken_ < ids_.size(); });
      batch_.assign(ids_.begin() + static_cast<std::ptrdiff_t>(taken_), ids_.end());
      taken_ = ids_.size();
      done = done_;
    }
    bool stop = false;
    for (std::int32_t id : batch_)
      if (!text_.push(id)) {
        stop = true;
        break;
      }
    if (stop) {
      std::lock_guard lock(mu_);
      stopped_ = true;
      done = true;
    }
    std::string out = text_.take();
    if (done) out += text_.finish();
    return out;
  }
  // After next() said done.
  FinishReason reason() const {
    std::lock_guard lock(mu_);
    return stopped_ ? FinishReason::kStop : reason_;
  }
  std::string error() const { std::lock_guard lock(mu_); return error_; }
  int tokens() const { return text_.tokens(); }  // those the text holds: up to the stop string
  const std::string& text() const { return text_.text(); }
  int cached_tokens() const { std::lock_guard lock(mu_); return cached_; }
  RequestTimings timings(int prompt_tokens) const {
    std::lock_guard lock(mu_);
    RequestTimings t;
    t.cache_n = cached_;
    t.prompt_n = prompt_tokens - cached_;
    t.prompt_ms = ids_.empty() ? 0 : (t_first_ - t_admit_) * 1e3;
    t.predicted_n = text_.tokens();
    t.predicted_ms = (t_last_ - t_first_) * 1e3;
    return t;
  }
  std::vector<TokenLogprob> logprobs() const {
    std::lock_guard lock(mu_);
    std::vector<TokenLogprob> out;
    const std::size_t n = std::min(logprob_ids_.size(), static_cast<std::size_t>(text_.tokens()));
    for (std::size_t i = 0; i < n; ++i) {
      const RawLogprob& r = logprob_ids_[i];
      TokenLogprob t{tokenizer_.decode({r.token}), r.logprob, {}};
      for (const auto& [id, lp] : r.top) t.top.emplace_back(tokenizer_.decode({id}), lp);
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  struct RawLogprob {
    std::int32_t token;
    double logprob;
    std::vector<std::pair<std::int32_t, double>> top;
  };
  // log softmax in double: logprob_i = l_i - max - log sum_j exp(l_j - max).
  void record_logprob(std::int32_t token, std::span<const float> logits) {
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
    const double norm = mx + std::log(sum);
    RawLogprob r{token, logits[static_cast<std::size_t>(token)] - norm, {}};
    std::vector<int> idx(logits.size());
    std::iota(idx.begin(), idx.end(), 0);
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(logprobs_), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                      [&](int a, int b) { return logits[a] > logits[b]; });
    for (std::size_t i = 0; i < k; ++i) r.top.emplace_back(idx[i], logits[idx[i]] - norm);
    logprob_ids_.push_back(std::move(r));
  }

  const Tokenizer& tokenizer_;  // the server's, which outlives every request
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // The HTTP thread's only:
  TextStream text_;
  std::vector<std::int32_t> batch_;
  // Shared, under mu_:
  int logprobs_;
  std::vector<RawLogprob> logprob_ids_;
  ServerMetrics* metrics_;  // the server's, which outlives every request
  std::vector<std::int32_t> ids_;
  std::size_t taken_ = 0;
  bool done_ = false, stopped_ = false, gone_ = false;
  FinishReason reason_ = FinishReason::kLength;
  std::string error_;
  int cached_ = 0;
  double t_submit_, t_admit_ = 0, t_first_ = 0, t_last_ = 0;
};

// cpp-httplib 0.11 listens with a backlog of 5: a burst of concurrent clients overflows it, and the
// kernel drops their connections for a 1 s SYN retry, which a TTFT percentile would measure. Linux
// takes listen() again on a listening socket as a new backlog, so the server's socket is found by
// its port and given SOMAXCONN.
void raise_listen_backlog(int port) {
  for (int fd = 0; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    const int p = addr.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                  : addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                               : -1;
    if (p == port) ::listen(fd, SOMAXCONN);
  }
}

// 400 naming `param` when a token id the client sent is outside the model's vocabulary.
void require_in_vocabulary(std::int32_t id, int vocab_size, const std::string& param) {
  if (id >= vocab_size)
    throw ApiError(400, "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab_size),
                   param);
}

std::string random_id(const char* prefix) {
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t n = counter++ ^ (static_cast<std::uint64_t>(std::time(nullptr)) << 20);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s-%016llx", prefix, static_cast<unsigned long long>(n));
  return buf;
}

}  // namespace

struct MoeServer::Impl {
  MoeEngine& engine;          // the caller's; outlives the server
  const Tokenizer& tokenizer;  // the same
  ServeOptions o;
  ServerMetrics metrics;
  ContinuousBatcher batcher;
  httplib::Server http;
  std::atomic<bool> draining{false};
  std::atomic<std::uint64_t> seeds{0x5eed};
  int port = -1;

  Impl(MoeEngine& e, const Tokenizer& t, ServeOptions options)
      : engine(e), tokenizer(t), o(std::move(options)), batcher(e, o.batcher) {}

  void check_auth(const httplib::Request& req) const {
    if (o.api_key.empty()) return;
    if (req.get_header_value("Authorization") != "Bearer " + o.api_key)
      throw ApiError(401, "missing or invalid API key: send the header 'Authorization: Bearer KEY'", "",
                     "invalid_api_key");
  }
  void generate(const httplib::Request& req, httplib::Response& res, bool chat);
  void routes();
};

void MoeServer::Impl::generate(const httplib::Request& req, httplib::Response& res, bool chat) {
  check_auth(req);
  if (draining) throw ApiError(503, "the server is shutting down");
  const CompletionRequest r = parse_completion_request(req.body, chat);
  if (!r.model.empty() && r.model != o.model_name)
    throw ApiError(404, "the model '" + r.model + "' does not exist; this server serves '" + o.model_name + "'", "model",
                   "model_not_found");
  const MoeConfig& c = engine.config();
  std::vector<std::int32_t> ids;
  if (chat) {
    const ChatTemplateEntry& t = chat_template(o.chat_template);
    if (!t.render)
      throw ApiError(400, "this model has no chat template: use /v1/completions, or start the server with "
                          "--chat-template NAME (ferry moe serve --help lists them)",
                     "messages");
    std::string text;
    try {
      text = t.render(r.messages);
    } catch (const InvalidArgument& e) {
      throw ApiError(400, e.what(), "messages");
    }
    ids = tokenizer.encode(text);
    if (t.adds_bos && tokenizer.bos_id() >= 0) ids.insert(ids.begin(), tokenizer.bos_id());
  } else if (!r.prompt_ids.empty()) {
    for (auto id : r.prompt_ids) require_in_vocabulary(id, c.vocab_size, "prompt");
    ids = r.prompt_ids;
  } else {
    ids = tokenizer.encode(r.prompt);
    if (tokenizer.bos_id() >= 0) ids.insert(ids.begin(), tokenizer.bos_id());  // as `ferry moe generate` does
  }
  if (ids.empty()) throw ApiError(400, "the prompt is empty", chat ? "messages" : "prompt");
  const int context = c.max_position_embeddings, prompt_tokens = static_cast<int>(ids.size());
  const int max_tokens = r.max_tokens.value_or(chat ? std::min(o.max_tokens, context - prompt_tokens) : std::min(16, o.max_tokens));
  if (r.max_tokens && *r.max_tokens > o.max_tokens)
    throw ApiError(400, "'max_tokens' is " + std::to_string(*r.max_tokens) + ", above this server's limit of " +
                            std::to_string(o.max_tokens) + " (--max-tokens)", "max_tokens");
  if (max_tokens < 1 || prompt_tokens + max_tokens > context)
    throw ApiError(400, "this model's maximum context length is " + std::to_string(context) + " tokens; you requested " +
                            std::to_string(prompt_tokens + std::max(max_tokens, 1)) + " (" + std::to_string(prompt_tokens) +
                            " in the prompt, " + std::to_string(std::max(max_tokens, 1)) + " for the completion)",
                   chat ? "messages" : "prompt", "context_length_exceeded");

  for (const auto& [id, bias] : r.logit_bias) require_in_vocabulary(id, c.vocab_size, "logit_bias");
  auto state = std::make_shared<RequestState>(tokenizer, r.stop, r.logprobs, max_tokens, &metrics);
  GenerationJob job;
  job.prompt = ids;
  job.sampling.max_new_tokens = max_tokens;
  job.sampling.temperature = r.temperature;
  job.sampling.top_p = r.top_p;
  job.sampling.top_k = r.top_k;
  job.sampling.min_p = r.min_p;
  job.sampling.repeat_penalty = r.repeat_penalty;
  job.sampling.presence_penalty = r.presence_penalty;
  job.sampling.frequency_penalty = r.frequency_penalty;
  job.sampling.penalty_last_n = r.repeat_last_n;
  job.sampling.logit_bias = r.logit_bias;
  job.sampling.seed = r.seed.value_or(seeds++);
  job.cache_prompt = r.cache_prompt;
  if (!r.ignore_eos) job.stop_tokens = o.eos_ids;
  job.sink = state;
  switch (batcher.submit(std::move(job))) {
    case ContinuousBatcher::Admit::kQueued: break;
    case ContinuousBatcher::Admit::kQueueFull:
      throw ApiError(429, "the server is busy: " + std::to_string(o.batcher.max_batch) + " sequences run and " +
                              std::to_string(o.batcher.max_queue) + " wait (--max-batch, --max-queue); retry later",
                     "", "server_busy");
    case ContinuousBatcher::Admit::kStopping: throw ApiError(503, "the server is shutting down");
  }
  CompletionResult base;
  base.id = random_id(chat ? "chatcmpl" : "cmpl");
  base.model = o.model_name;
  base.created = static_cast<std::int64_t>(std::time(nullptr));
  base.prompt_tokens = prompt_tokens;
  auto finish_name = [](FinishReason why) { return std::string(finish_reason_name(why)); };
  if (!r.stream) {
    bool done = false;
    while (!done) state->next(done);
    base.text = state->text();
    base.completion_tokens = state->tokens();
    base.cached_tokens = state->cached_tokens();
    base.finish_reason = finish_name(state->reason());
    base.with_logprobs = r.logprobs >= 0;
    base.logprobs = state->logprobs();
    metrics.request_tokens(base.prompt_tokens, base.completion_tokens);
    if (state->reason() == FinishReason::kError) throw ApiError(500, "generation failed: " + state->error());
    if (state->reason() == FinishReason::kCancelled)
      throw ApiError(503, "the server shut down before the request finished (" + std::to_string(base.completion_tokens) +
                              " tokens generated)");
    json answer = completion_response(base, chat);
    answer["timings"] = timings_json(state->timings(prompt_tokens));
    res.set_content(dump_json(answer), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  const bool usage = r.include_usage;
  ServerMetrics* m = &metrics;  // outlives the provider: the server answers every request before it goes
  res.set_chunked_content_provider(
      "text/event-stream", [state, base, chat, usage, finish_name, m](std::size_t, httplib::DataSink& sink) mutable {
        auto send = [&](const std::string& data) {
          const std::string event = "data: " + data + "\n\n";
          return sink.write(event.data(), event.size());
        };
        if (chat && !send(dump_json(completion_chunk(base, chat, "", "", true)))) {
          state->client_gone();
          return false;
        }
        for (bool done = false; !done;) {
          const std::string delta = state->next(done);
          if (!delta.empty() && !send(dump_json(completion_chunk(base, chat, delta, "")))) {
            state->client_gone();  // the batcher frees the slot before its next step
            return false;
          }
        }
        base.completion_tokens = state->tokens();
        base.cached_tokens = state->cached_tokens();
        m->request_tokens(base.prompt_tokens, base.completion_tokens);
        if (state->reason() == FinishReason::kError) {
          send(ApiError(500, "generation failed: " + state->error()).body());
        } else {
          json last = completion_chunk(base, chat, "", finish_name(state->reason()));
          last["timings"] = timings_json(state->timings(base.prompt_tokens));  // as llama.cpp's last chunk
          send(dump_json(last));
          if (usage) send(dump_json(usage_chunk(base, chat)));
        }
        send("[DONE]");
        sink.done();
        return true;
      });
}

void MoeServer::Impl::routes() {
  auto guarded = [](auto handler) {
    return [handler](const httplib::Request& req, httplib::Response& res) {
      try {
        handler(req, res);
      } catch (const ApiError& e) {
        res.status = e.status();
        res.set_content(e.body(), "application/json");
      } catch (const InvalidArgument& e) {
        res.status = 400;
        res.set_content(ApiError(400, e.what()).body(), "application/json");
      } catch (const std::exception& e) {
        res.status = 500;
        res.set_content(ApiError(500, e.what()).body(), "application/json");
      }
    };
  };
  http.Post("/v1/completions", guarded([this](const auto& req, auto& res) { generate(req, res, false); }));
  http.Post("/v1/chat/completions", guarded([this](const auto& req, auto& res) { generate(req, res, true); }));
  http.Get("/v1/models", guarded([this](const httplib::Request& req, httplib::Response& res) {
    check_auth(req);
    json model = {{"id", o.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "ferry"},
                  {"max_model_len", engine.config().max_position_embeddings}};
    res.set_content(dump_json(json{{"object", "list"}, {"data", json::array({model})}}), "application/json");
  }));
  // llama.cpp's /tokenize and /detokenize.
  http.Post("/tokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    check_auth(req);
    const TokenizeRequest t = parse_tokenize_request(req.body);
    std::vector<std::int32_t> ids = tokenizer.encode(t.content);
    if (t.add_special && tokenizer.bos_id() >= 0) ids.insert(ids.begin(), tokenizer.bos_id());
    json tokens = json::array();
    for (std::int32_t id : ids)
      tokens.push_back(t.with_pieces ? json{{"id", id}, {"piece", tokenizer.decode({id})}} : json(id));
    res.set_content(dump_json(json{{"tokens", tokens}}), "application/json");
  }));
  http.Post("/detokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    check_auth(req);
    const std::vector<std::int32_t> ids = parse_detokenize_request(req.body);
    for (std::int32_t id : ids) require_in_vocabulary(id, engine.config().vocab_size, "tokens");
    res.set_content(dump_json(json{{"content", tokenizer.decode(ids)}}), "application/json");
  }));
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining) {
      res.status = 503;
      res.set_content(R"({"status":"shutting down"})", "application/json");
    } else {
      res.set_content(R"({"status":"ok"})", "application/json");
    }
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(batcher.snapshot(), o.batcher), "text/plain; version=0.0.4");
  });
  // Every other error (no such route, a body over the limit, a malformed request line) in the API's shape.
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 404) message = "no route " + req.method + " " + req.path;
    if (res.status == 413) message = "request body larger than " + std::to_string(o.max_body_bytes) + " bytes";
    if (res.status == 400) message = "malformed HTTP request";
    res.set_content(ApiError(res.status, message).body(), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_logger([this](const httplib::Request&, const httplib::Response& res) { metrics.request_done(res.status); });
  // SO_REUSEADDR only (cpp-httplib 0.11 sets SO_REUSEPORT, not SO_REUSEADDR, on Linux): a server
  // restarted on its port binds at once despite the last one's connections in TIME_WAIT, and a
  // second server on a port in use is refused instead of sharing it.
  http.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_payload_max_length(o.max_body_bytes);
  // cpp-httplib bounds a body by its Content-Length only: a chunked body would be read whole, however
  // large. It is refused before its body is read (as nginx did before it read chunked bodies).
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string te = req.get_header_value("Transfer-Encoding");
    if (te.empty() || te == "identity") return httplib::Server::HandlerResponse::Unhandled;
    res.status = 411;
    res.set_header("Connection", "close");
    res.set_content(ApiError(411, "request bodies with Transfer-Encoding '" + te.substr(0, 40) +
                                      "' are not accepted: send Content-Length (at most " +
                                      std::to_string(o.max_body_bytes) + " bytes, --max-body)")
                        .body(),
                    "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_keep_alive_timeout(1);  // bounds how long an idle connection delays shutdown
  // A thread per connection that can be waiting: every batch slot and queue place, plus room for
  // /health, /metrics and the requests that are refused.
  const std::size_t threads = static_cast<std::size_t>(o.batcher.max_batch + o.batcher.max_queue) + 16;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
}

MoeServer::MoeServer(MoeEngine& engine, const Tokenizer& tokenizer, ServeOptions options)
    : impl_(std::make_unique<Impl>(engine, tokenizer, std::move(options))) {
  const ServeOptions& o = impl_->o;
  FERRY_REQUIRE_IN(o.port, 0, 65535, "[]", "--port");
  FERRY_REQUIRE_GE(o.max_tokens, 1, "--max-tokens");
  FERRY_REQUIRE_GE(o.drain_s, 0, "--drain");  // an infinite drain waits for every request
  chat_template(o.chat_template);  // an unknown name fails here, listing the known ones
  impl_->batcher.set_step_observer([m = &impl_->metrics](const StepInfo& s) { m->step(s); });
  impl_->routes();
}

MoeServer::~MoeServer() {
  impl_->batcher.stop(0);
}

int MoeServer::bind() {
  Impl& m = *impl_;
  m.port = m.o.port == 0 ? m.http.bind_to_any_port(m.o.host) : (m.http.bind_to_port(m.o.host, m.o.port) ? m.o.port : -1);
  if (m.port <= 0) FERRY_THROW(IoError, "cannot listen on ", m.o.host, ":", m.o.port, " (in use, or not an address here)");
  raise_listen_backlog(m.port);
  return m.port;
}

void MoeServer::run() {
  Impl& m = *impl_;
  FERRY_REQUIRE(m.port > 0, "MoeServer::run() before bind()");
  signal(SIGPIPE, SIG_IGN);  // a client that hung up makes a write fail, not the process die
  m.batcher.start();
  m.http.listen_after_bind();
  m.batcher.stop(0);
}

void MoeServer::shutdown() {
  Impl& m = *impl_;
  if (m.draining.exchange(true)) return;
  m.batcher.stop(m.o.drain_s);  // every admitted request has its answer now
  // httplib's stop() does nothing before listening began: a signal right after start waits for it.
  for (int i = 0; i < 500 && !m.http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  m.http.stop();
}

}  // namespace ferry::moe
