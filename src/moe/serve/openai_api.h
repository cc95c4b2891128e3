// OpenAI's completions and chat completions API (https://platform.openai.com/docs/api-reference):
// the requests ferry accepts, checked field by field, and the response and stream-chunk bodies.
// A field of the wrong type, a value out of range, a field ferry does not implement set to anything
// but its neutral value, or a field OpenAI does not define is an ApiError (HTTP 400), never ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "moe/tokenizer/chat_template.h"

namespace ferry::moe {

// An error answered as {"error": {"message", "type", "param", "code"}} with an HTTP status.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string code = "");
  int status() const { return status_; }
  // invalid_request_error (4xx but 401, 429), authentication_error (401), rate_limit_error (429),
  // server_error (5xx).
  std::string type() const;
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // The body: {"error": {...}}.
  std::string body() const;

 private:
  int status_;
  std::string param_, code_;
};

struct CompletionRequest {
  bool chat = false;
  std::string model;                   // optional; must name the served model when given
  std::string prompt;                  // completions: text
  std::vector<std::int32_t> prompt_ids;  // completions: token ids given instead of text
  std::vector<ChatMessage> messages;   // chat
  std::optional<int> max_tokens;       // absent: completions 16 (OpenAI's default), chat the server's limit
  double temperature = 1.0;            // OpenAI's default; 0 = greedy
  double top_p = 1.0;
  int top_k = 0;                       // an extension (as vLLM and llama.cpp take it): 0 = all
  std::optional<std::uint64_t> seed;   // absent: a seed of the server's
  std::vector<std::string> stop;       // up to 4 strings
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage: a last chunk with usage
  bool ignore_eos = false;             // an extension (vLLM): generate past end-of-sequence tokens
  int logprobs = -1;                   // -1: none; else the log-probability of each token and this many alternatives
                                       // (completions: logprobs 0..5 or llama.cpp's n_probs 0..20; chat: logprobs
                                       // true, top_logprobs 0..20)
  // Sampling beyond OpenAI's (as llama.cpp's server and vLLM take them; moe/engine/sampler.h).
  double min_p = 0;                    // 0..1
  double repeat_penalty = 1;           // > 0; 1: off
  int repeat_last_n = 64;              // tokens the penalties look back; -1: the whole context (llama.cpp)
  double presence_penalty = 0;         // -2..2 (OpenAI)
  double frequency_penalty = 0;        // -2..2 (OpenAI)
  std::vector<std::pair<std::int32_t, float>> logit_bias;  // token id -> -100..100 (OpenAI)
  bool cache_prompt = true;            // llama.cpp's: reuse the KV cache of a previous request's common prefix
};

// POST /tokenize ({"content": text, "add_special": bool, "with_pieces": bool}) and POST /detokenize
// ({"tokens": [ids]}), as llama.cpp's server takes them.
struct TokenizeRequest {
  std::string content;
  bool add_special = false;  // prepend the beginning-of-sequence token when the tokenizer has one
  bool with_pieces = false;  // answer [{"id", "piece"}] instead of [ids]
};
TokenizeRequest parse_tokenize_request(const std::string& body);
std::vector<std::int32_t> parse_detokenize_request(const std::string& body);

// What a request cost, in llama.cpp's `timings` shape.
struct RequestTimings {
  int cache_n = 0;           // prompt tokens reused from the prefix cache
  int prompt_n = 0;          // prompt tokens prefilled
  double prompt_ms = 0;      // from joining the batch to the first token
  int predicted_n = 0;       // tokens generated
  double predicted_ms = 0;   // from the first token to the last
};
nlohmann::json timings_json(const RequestTimings& t);

// Parses and checks the body of POST /v1/completions (chat = false) or /v1/chat/completions.
CompletionRequest parse_completion_request(const std::string& body, bool chat);

// A generated token's log-probability under the model (before temperature, top-k and top-p) and
// the most likely tokens at its position.
struct TokenLogprob {
  std::string token;  // the token's text
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;
};

struct CompletionResult {
  std::string id, model, text, finish_reason;
  std::int64_t created = 0;
  int prompt_tokens = 0, completion_tokens = 0;
  int cached_tokens = 0;  // usage.prompt_tokens_details.cached_tokens
  bool with_logprobs = false;
  std::vector<TokenLogprob> logprobs;  // per generated token, when with_logprobs
};

// The whole response (stream = false).
nlohmann::json completion_response(const CompletionResult& r, bool chat);
// One stream chunk: a text delta, or with finish_reason set the last content chunk. For chat the
// first chunk carries the assistant role (role_chunk).
nlohmann::json completion_chunk(const CompletionResult& r, bool chat, const std::string& delta,
                                const std::string& finish_reason, bool role_chunk = false);
// The usage chunk (stream_options.include_usage): no choices.
nlohmann::json usage_chunk(const CompletionResult& r, bool chat);
nlohmann::json usage_json(const CompletionResult& r);
// JSON text with invalid UTF-8 replaced (a byte-level model can produce any byte).
std::string dump_json(const nlohmann::json& j);

}  // namespace ferry::moe
