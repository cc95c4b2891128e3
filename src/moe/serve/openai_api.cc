#include "moe/serve/openai_api.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"

namespace ferry::moe {

using nlohmann::json;

ApiError::ApiError(int status, std::string message, std::string param, std::string code)
    : std::runtime_error(std::move(message)), status_(status), param_(std::move(param)), code_(std::move(code)) {}

std::string ApiError::type() const {
  if (status_ == 401) return "authentication_error";
  if (status_ == 429) return "rate_limit_error";
  if (status_ >= 500) return "server_error";
  return "invalid_request_error";
}

std::string ApiError::body() const {
  json e = {{"message", what()}, {"type", type()}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) e["param"] = param_;
  if (!code_.empty()) e["code"] = code_;
  return dump_json(json{{"error", e}});
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) { throw ApiError(400, message, param); }

// A value as an error message shows it: at most 40 characters of its JSON.
std::string excerpt(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

// The body as JSON, its nesting bounded before it is parsed (core/json_depth.h).
json parse_body(const std::string& text) {
  if (json_nesting_depth(text, kMaxJsonDepthRequest) > kMaxJsonDepthRequest)
    throw ApiError(400, "request body nests arrays or objects deeper than " + std::to_string(kMaxJsonDepthRequest) +
                            " levels");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("request body is not valid JSON: ") + e.what());
  }
}

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

double number_in(const json& body, const char* key, double lo, double hi, double fallback) {
  if (!body.contains(key) || body[key].is_null()) return fallback;
  const json& v = body[key];
  if (!v.is_number()) bad(key, std::string("'") + key + "' must be a number, got " + type_name(v));
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    bad(key, std::string("'") + key + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " + v.dump());
  return x;
}

std::optional<std::int64_t> integer(const json& body, const char* key, std::int64_t lo, std::int64_t hi) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
    bad(key, std::string("'") + key + "' must be an integer, got " + (v.is_number() ? v.dump() : type_name(v)));
  if (v.is_number_float() ? !(v.get<double>() >= lo && v.get<double>() <= hi)
                          : v.is_number_unsigned() ? (v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi) ||
                                                      (lo > 0 && v.get<std::uint64_t>() < static_cast<std::uint64_t>(lo)))
                                                   : (v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi))
    bad(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  return v.is_number_float() ? static_cast<std::int64_t>(v.get<double>()) : v.get<std::int64_t>();
}

bool boolean(const json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return false;
  if (!body[key].is_boolean()) bad(key, std::string("'") + key + "' must be a boolean, got " + type_name(body[key]));
  return body[key].get<bool>();
}

// Fields OpenAI defines that change the output and ferry does not implement: accepted only at
// their neutral value, refused otherwise.
void neutral_only(const json& body, const char* key, const json& neutral) {
  if (!body.contains(key) || body[key].is_null() || body[key] == neutral) return;
  bad(key, std::string("'") + key + "' is not supported by this server (only " + neutral.dump() + ")");
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& text, bool chat) {
  json body = parse_body(text);
  if (!body.is_object()) throw ApiError(400, "request body must be a JSON object, got " + type_name(body));
  static const std::set<std::string> common = {
      "model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "n", "stream", "stream_options",
      "ignore_eos", "user", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "min_p",
      "repeat_penalty", "repeat_last_n", "cache_prompt"};
  static const std::set<std::string> completion_only = {"prompt", "echo", "best_of", "suffix", "n_probs"};
  static const std::set<std::string> chat_only = {"messages", "max_completion_tokens", "top_logprobs", "tools",
                                                  "tool_choice", "response_format"};
  for (const auto& [key, value] : body.items())
    if (!common.count(key) && !(chat ? chat_only : completion_only).count(key))
      bad(key, "unknown field '" + key + "' for " + (chat ? "/v1/chat/completions" : "/v1/completions"));

  CompletionRequest r;
  r.chat = chat;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) bad("model", "'model' must be a string, got " + type_name(body["model"]));
    r.model = body["model"].get<std::string>();
  }
  if (!chat) {
    if (!body.contains("prompt")) bad("prompt", "'prompt' is required");
    const json& p = body["prompt"];
    const json* one = &p;
    if (p.is_array() && !p.empty() && !p[0].is_number()) {  // a list of prompts: one is served (n = 1)
      if (p.size() != 1) bad("prompt", "one prompt per request is supported, got " + std::to_string(p.size()));
      one = &p[0];
    }
    if (one->is_string()) {
      r.prompt = one->get<std::string>();
    } else if (one->is_array()) {
      for (const auto& t : *one) {
        if (!t.is_number_integer() || t.get<std::int64_t>() < 0 || t.get<std::int64_t>() > INT32_MAX)
          bad("prompt", "'prompt' as token ids must hold non-negative integers, got " + excerpt(t));
        r.prompt_ids.push_back(static_cast<std::int32_t>(t.get<std::int64_t>()));
      }
      if (r.prompt_ids.empty()) bad("prompt", "'prompt' is empty");
    } else {
      bad("prompt", "'prompt' must be a string, an array of token ids or an array of one string, got " + type_name(*one));
    }
    neutral_only(body, "echo", false);
    neutral_only(body, "best_of", 1);
    neutral_only(body, "suffix", nullptr);
    if (auto lp = integer(body, "logprobs", 0, 5)) r.logprobs = static_cast<int>(*lp);
    if (auto np = integer(body, "n_probs", 0, 20)) {
      if (r.logprobs >= 0) bad("n_probs", "give 'logprobs' or 'n_probs', not both");
      if (*np > 0) r.logprobs = static_cast<int>(*np);
    }
  } else {
    if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
      bad("messages", "'messages' must be a non-empty array of {role, content}");
    for (const auto& m : body["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        bad("messages", "each message must be an object with a string 'role'");
      if (!m.contains("content") || !m["content"].is_string())
        bad("messages", "message content must be a string (role '" + m["role"].get<std::string>() + "')");
      for (const auto& [k, v] : m.items())
        if (k != "role" && k != "content" && k != "name") bad("messages", "unknown message field '" + k + "'");
      r.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    const bool lp = boolean(body, "logprobs");
    const auto top = integer(body, "top_logprobs", 0, 20);
    if (top && !lp) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (lp) r.logprobs = static_cast<int>(top.value_or(0));
    neutral_only(body, "tools", nullptr);
    neutral_only(body, "tool_choice", nullptr);
    neutral_only(body, "response_format", nullptr);
  }
  r.presence_penalty = number_in(body, "presence_penalty", -2, 2, 0);
  r.frequency_penalty = number_in(body, "frequency_penalty", -2, 2, 0);
  r.min_p = number_in(body, "min_p", 0, 1, 0);
  r.repeat_penalty = number_in(body, "repeat_penalty", 0, 1e6, 1);
  if (r.repeat_penalty <= 0) bad("repeat_penalty", "'repeat_penalty' must be greater than 0");
  r.repeat_last_n = static_cast<int>(integer(body, "repeat_last_n", -1, INT32_MAX).value_or(64));
  if (body.contains("cache_prompt") && !body["cache_prompt"].is_null()) r.cache_prompt = boolean(body, "cache_prompt");
  if (body.contains("logit_bias") && !body["logit_bias"].is_null()) {
    const json& b = body["logit_bias"];
    if (!b.is_object()) bad("logit_bias", "'logit_bias' must be an object of token id -> bias, got " + type_name(b));
    for (const auto& [k, v] : b.items()) {
      std::int64_t id = -1;
      std::size_t used = 0;
      try {
        id = std::stoll(k, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != k.size() || id < 0 || id > INT32_MAX)
        bad("logit_bias", "'logit_bias' keys must be token ids (non-negative integers as strings), got \"" +
                              k.substr(0, 40) + "\"");
      if (!v.is_number() || !(v.get<double>() >= -100 && v.get<double>() <= 100))
        bad("logit_bias", "'logit_bias' values must be numbers in [-100, 100], got " + excerpt(v));
      r.logit_bias.emplace_back(static_cast<std::int32_t>(id), v.get<float>());
    }
  }
  if (auto v = integer(body, "n", 1, 128); v && *v != 1) bad("n", "'n' must be 1 (one choice per request), got " + std::to_string(*v));
  auto max_tokens = integer(body, "max_tokens", 1, INT32_MAX);
  if (chat) {
    if (auto mc = integer(body, "max_completion_tokens", 1, INT32_MAX)) max_tokens = mc;
  }
  if (max_tokens) r.max_tokens = static_cast<int>(*max_tokens);
  r.temperature = number_in(body, "temperature", 0, 2, 1.0);
  r.top_p = number_in(body, "top_p", 0, 1, 1.0);
  if (r.top_p <= 0) bad("top_p", "'top_p' must be greater than 0");
  r.top_k = static_cast<int>(integer(body, "top_k", -1, INT32_MAX).value_or(0));
  if (r.top_k < 0) r.top_k = 0;  // -1: all tokens, as vLLM spells it
  if (auto s = integer(body, "seed", INT64_MIN, INT64_MAX)) r.seed = static_cast<std::uint64_t>(*s);
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      if (s.size() > 4) bad("stop", "'stop' takes at most 4 sequences, got " + std::to_string(s.size()));
      for (const auto& x : s) {
        if (!x.is_string()) bad("stop", "'stop' must be a string or an array of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "'stop' must be a string or an array of strings, got " + type_name(s));
    }
  }
  r.stream = boolean(body, "stream");
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) bad("stream_options", "'stream_options' must be an object");
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed with stream: true");
    for (const auto& [k, v] : so.items())
      if (k != "include_usage") bad("stream_options", "unknown field 'stream_options." + k + "'");
    r.include_usage = boolean(so, "include_usage");
  }
  r.ignore_eos = boolean(body, "ignore_eos");
  if (r.stream && r.logprobs >= 0) bad("logprobs", "'logprobs' is supported without stream only");
  if (body.contains("user") && !body["user"].is_null() && !body["user"].is_string())
    bad("user", "'user' must be a string");
  return r;
}

json usage_json(const CompletionResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
}

namespace {

json object_body(const std::string& text, const char* route, const std::set<std::string>& fields) {
  const json body = parse_body(text);
  if (!body.is_object()) throw ApiError(400, "request body must be a JSON object, got " + type_name(body));
  for (const auto& [key, value] : body.items())
    if (!fields.count(key)) bad(key, "unknown field '" + key + "' for " + route);
  return body;
}

}  // namespace

TokenizeRequest parse_tokenize_request(const std::string& text) {
  const json body = object_body(text, "/tokenize", {"content", "add_special", "with_pieces", "parse_special"});
  TokenizeRequest r;
  if (!body.contains("content") || !body["content"].is_string())
    bad("content", "'content' must be a string" + (body.contains("content") ? ", got " + type_name(body["content"]) : std::string(" (required)")));
  r.content = body["content"].get<std::string>();
  r.add_special = boolean(body, "add_special");
  r.with_pieces = boolean(body, "with_pieces");
  neutral_only(body, "parse_special", true);
  return r;
}

std::vector<std::int32_t> parse_detokenize_request(const std::string& text) {
  const json body = object_body(text, "/detokenize", {"tokens"});
  if (!body.contains("tokens") || !body["tokens"].is_array())
    bad("tokens", "'tokens' must be an array of token ids" + (body.contains("tokens") ? ", got " + type_name(body["tokens"]) : std::string(" (required)")));
  std::vector<std::int32_t> ids;
  for (const auto& t : body["tokens"]) {
    if (!t.is_number_integer() || t.get<std::int64_t>() < 0 || t.get<std::int64_t>() > INT32_MAX)
      bad("tokens", "'tokens' must hold non-negative integers, got " + excerpt(t));
    ids.push_back(static_cast<std::int32_t>(t.get<std::int64_t>()));
  }
  return ids;
}

json timings_json(const RequestTimings& t) {
  auto per_token = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  auto per_second = [](double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  const int decoded = std::max(t.predicted_n - 1, 0);  // the first token comes with the prompt
  return {{"cache_n", t.cache_n},
          {"prompt_n", t.prompt_n},
          {"prompt_ms", t.prompt_ms},
          {"prompt_per_token_ms", per_token(t.prompt_ms, t.prompt_n)},
          {"prompt_per_second", per_second(t.prompt_ms, t.prompt_n)},
          {"predicted_n", t.predicted_n},
          {"predicted_ms", t.predicted_ms},
          {"predicted_per_token_ms", per_token(t.predicted_ms, decoded)},
          {"predicted_per_second", per_second(t.predicted_ms, decoded)}};
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

// OpenAI's two shapes: completions' parallel lists, chat's list of objects with the token's bytes.
json logprobs_json(const std::vector<TokenLogprob>& lps, bool chat) {
  if (chat) {
    json content = json::array();
    for (const auto& t : lps) {
      json top = json::array();
      for (const auto& [tok, lp] : t.top) top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_of(tok)}});
      content.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", bytes_of(t.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
  std::size_t offset = 0;
  for (const auto& t : lps) {
    tokens.push_back(t.token);
    values.push_back(t.logprob);
    json top = json::object();
    for (const auto& [tok, lp] : t.top) top[tok] = lp;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += t.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace

json completion_response(const CompletionResult& r, bool chat) {
  json choice = {{"index", 0}, {"logprobs", r.with_logprobs ? logprobs_json(r.logprobs, chat) : json(nullptr)},
                 {"finish_reason", r.finish_reason}};
  if (chat) choice["message"] = {{"role", "assistant"}, {"content", r.text}};
  else choice["text"] = r.text;
  return {{"id", r.id},
          {"object", chat ? "chat.completion" : "text_completion"},
          {"created", r.created},
          {"model", r.model},
          {"choices", json::array({choice})},
          {"usage", usage_json(r)}};
}

json completion_chunk(const CompletionResult& r, bool chat, const std::string& delta, const std::string& finish_reason,
                      bool role_chunk) {
  json choice = {{"index", 0}, {"logprobs", nullptr},
                 {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)}};
  if (chat) {
    json d = json::object();
    if (role_chunk) d["role"] = "assistant";
    if (role_chunk || !delta.empty()) d["content"] = delta;
    choice["delta"] = d;
  } else {
    choice["text"] = delta;
  }
  return {{"id", r.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", r.created},
          {"model", r.model},
          {"choices", json::array({choice})}};
}

json usage_chunk(const CompletionResult& r, bool chat) {
  return {{"id", r.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", r.created},
          {"model", r.model},
          {"choices", json::array()},
          {"usage", usage_json(r)}};
}

}  // namespace ferry::moe
