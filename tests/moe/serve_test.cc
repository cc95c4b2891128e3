// The server's pieces without a socket: OpenAI request checking (every bad field a 400 naming it),
// incremental detokenization with stop strings and UTF-8 hold-back, the chat templates against
// the families' published renderings, and the Prometheus histogram.
#include <ctime>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/family.h"
#include "moe/serve/openai_api.h"
#include "moe/serve/server_metrics.h"
#include "moe/serve/text_stream.h"
#include "moe/tokenizer/chat_template.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {
namespace {

int status_of(const std::string& body, bool chat, std::string* message = nullptr, std::string* param = nullptr) {
  try {
    parse_completion_request(body, chat);
  } catch (const ApiError& e) {
    if (message) *message = e.what();
    if (param) *param = e.param();
    return e.status();
  }
  return 200;
}

TEST(OpenAiRequest, ReadsEveryFieldItTakes) {
  auto r = parse_completion_request(
      R"({"model":"m","prompt":"hi","max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":3,"seed":42,
          "stop":["a","bc"],"n":1,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"user":"u"})",
      false);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "hi");
  EXPECT_EQ(r.max_tokens.value(), 7);
  EXPECT_DOUBLE_EQ(r.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.top_p, 0.9);
  EXPECT_EQ(r.top_k, 3);
  EXPECT_EQ(r.seed.value(), 42u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream && r.include_usage && r.ignore_eos);
  auto ids = parse_completion_request(R"({"prompt":[1,2,3]})", false);
  EXPECT_EQ(ids.prompt_ids, (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_FALSE(ids.max_tokens.has_value());
  EXPECT_DOUBLE_EQ(ids.temperature, 1.0);  // OpenAI's default
  auto chat = parse_completion_request(
      R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}],"max_completion_tokens":5,
          "logprobs":true,"top_logprobs":2})",
      true);
  ASSERT_EQ(chat.messages.size(), 2u);
  EXPECT_EQ(chat.messages[1].content, "q");
  EXPECT_EQ(chat.max_tokens.value(), 5);
  EXPECT_EQ(chat.logprobs, 2);
}

TEST(OpenAiRequest, EveryBadFieldIsA400NamingIt) {
  struct Case {
    const char* body;
    bool chat;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt": "x",)", false, ""},                            // not JSON
      {R"([1, 2])", false, ""},                                      // not an object
      {R"({"max_tokens": 3})", false, "prompt"},                     // prompt missing
      {R"({"prompt": 5})", false, "prompt"},                         // wrong type
      {R"({"prompt": ["a", "b"]})", false, "prompt"},                // two prompts
      {R"({"prompt": [1, -2]})", false, "prompt"},                   // a negative token id
      {R"({"prompt": "x", "max_tokens": "9"})", false, "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 0})", false, "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 2.5})", false, "max_tokens"},
      {R"({"prompt": "x", "temperature": 3})", false, "temperature"},
      {R"({"prompt": "x", "temperature": "hot"})", false, "temperature"},
      {R"({"prompt": "x", "top_p": 0})", false, "top_p"},
      {R"({"prompt": "x", "n": 2})", false, "n"},
      {R"({"prompt": "x", "stop": 7})", false, "stop"},
      {R"({"prompt": "x", "stop": ["a","b","c","d","e"]})", false, "stop"},
      {R"({"prompt": "x", "stream": "yes"})", false, "stream"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", false, "stream_options"},
      {R"({"prompt": "x", "presence_penalty": 2.5})", false, "presence_penalty"},  // outside OpenAI's -2..2
      {R"({"prompt": "x", "echo": true})", false, "echo"},
      {R"({"prompt": "x", "logprobs": 9})", false, "logprobs"},
      {R"({"prompt": "x", "logprobs": 1, "stream": true})", false, "logprobs"},
      {R"({"prompt": "x", "temprature": 0})", false, "temprature"},  // a misspelt field is not ignored
      {R"({"prompt": "x", "messages": []})", false, "messages"},     // a chat field on completions
      {R"({"messages": []})", true, "messages"},
      {R"({"messages": [{"role": "user"}]})", true, "messages"},
      {R"({"messages": [{"role": "user", "content": 3}]})", true, "messages"},
      {R"({"messages": [{"role": "user", "content": "q", "extra": 1}]})", true, "messages"},
      {R"({"messages": [{"role": "user", "content": "q"}], "top_logprobs": 2})", true, "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "q"}], "tools": [{}]})", true, "tools"},
      {R"({"messages": [{"role": "user", "content": "q"}], "prompt": "x"})", true, "prompt"},
  };
  for (const auto& c : cases) {
    std::string message, param;
    EXPECT_EQ(status_of(c.body, c.chat, &message, &param), 400) << c.body;
    EXPECT_EQ(param, c.param) << c.body << ": " << message;
    EXPECT_FALSE(message.empty());
  }
}

TEST(OpenAiRequest, ErrorBodiesAndResponsesHaveOpenAisShape) {
  const auto e = nlohmann::json::parse(ApiError(429, "busy", "", "server_busy").body());
  EXPECT_EQ(e["error"]["message"], "busy");
  EXPECT_EQ(e["error"]["type"], "rate_limit_error");
  EXPECT_EQ(e["error"]["code"], "server_busy");
  EXPECT_TRUE(e["error"]["param"].is_null());
  CompletionResult r;
  r.id = "cmpl-1";
  r.model = "m";
  r.text = "ab\xff";  // a byte-level model's invalid UTF-8 is replaced, not a crash
  r.finish_reason = "length";
  r.prompt_tokens = 4;
  r.completion_tokens = 3;
  const auto j = nlohmann::json::parse(dump_json(completion_response(r, false)));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "ab\xef\xbf\xbd");
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  const auto c = completion_response(r, true);
  EXPECT_EQ(c["object"], "chat.completion");
  EXPECT_EQ(c["choices"][0]["message"]["role"], "assistant");
  const auto first = completion_chunk(r, true, "", "", true);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  const auto last = completion_chunk(r, true, "", "stop");
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(usage_chunk(r, false)["choices"].empty());
}

std::vector<std::int32_t> bytes(const std::string& s) { return ByteTokenizer().encode(s); }

// Streams `text` byte by byte; returns what take() gave, joined, and the rest from finish().
std::string stream_all(const std::string& text, std::vector<std::string> stops, std::string* rest, bool* stopped) {
  ByteTokenizer tok;
  TextStream ts(tok, std::move(stops));
  std::string sent;
  *stopped = false;
  for (auto id : bytes(text)) {
    const bool more = ts.push(id);
    sent += ts.take();
    if (!more) {
      *stopped = true;
      break;
    }
  }
  *rest = ts.finish();
  return sent;
}

TEST(TextStreamTest, StopStringsCutTheTextAndArePartlyHeldBack) {
  std::string rest;
  bool stopped = false;
  EXPECT_EQ(stream_all("hello world. bye", {"d."}, &rest, &stopped), "hello worl");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(rest, "");
  // "wor" could become "world": held back until it cannot, then sent.
  ByteTokenizer tok;
  TextStream ts(tok, {"world"});
  for (auto id : bytes("a wor")) ts.push(id);
  EXPECT_EQ(ts.take(), "a ");
  ts.push('k');
  EXPECT_EQ(ts.take(), "work");
  // The earliest of several stops wins.
  EXPECT_EQ(stream_all("x = 1\n\ny", {"\n\n", "= "}, &rest, &stopped), "x ");
  EXPECT_TRUE(stopped);
  // No stop: everything, and finish() returns nothing more.
  EXPECT_EQ(stream_all("plain", {"zz"}, &rest, &stopped) + rest, "plain");
  EXPECT_FALSE(stopped);
}

TEST(TextStreamTest, IncompleteUtf8IsHeldUntilComplete) {
  ByteTokenizer tok;
  TextStream ts(tok, {});
  const std::string euro = "\xe2\x82\xac";  // one character, three byte tokens
  ts.push('a');
  EXPECT_EQ(ts.take(), "a");
  ts.push(static_cast<unsigned char>(euro[0]));
  EXPECT_EQ(ts.take(), "");
  ts.push(static_cast<unsigned char>(euro[1]));
  EXPECT_EQ(ts.take(), "");
  ts.push(static_cast<unsigned char>(euro[2]));
  EXPECT_EQ(ts.take(), euro);
  ts.push(0xc3);  // cut at the end: finish() sends it as it is
  EXPECT_EQ(ts.take(), "");
  EXPECT_EQ(ts.finish(), "\xc3");
  EXPECT_EQ(utf8_complete_prefix("ab\xf0\x9f\x98"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xf0\x9f\x98\x80"), 6u);
  EXPECT_EQ(utf8_complete_prefix("\x80\x80"), 2u);  // stray continuation bytes are not held forever
}

TEST(ChatTemplates, RenderAsTheFamiliesPublishThem) {
  const std::vector<ChatMessage> conv = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "2+2?"}};
  EXPECT_EQ(chat_template("mistral").render(conv), "[INST] Be brief.\n\nHi [/INST]Hello</s>[INST] 2+2? [/INST]");
  EXPECT_TRUE(chat_template("mistral").adds_bos);
  EXPECT_EQ(chat_template("chatml").render(conv),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello"
            "<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat_template("chatml").render({{"user", "Hi"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(chat_template("tulu").render({{"user", "Hi"}, {"assistant", "Yo"}, {"user", "Q"}}),
            "<|endoftext|><|user|>\nHi\n<|assistant|>\nYo<|endoftext|>\n<|user|>\nQ\n<|assistant|>\n");
  EXPECT_EQ(chat_template("deepseek").render({{"user", "Hi"}}), "User: Hi\n\nAssistant:");
  // DeepSeek-V3's, GLM-4.5's and Kimi-K2's as llama.cpp's deepseek3, chatglm4 and kimi-k2 write them.
  const std::string bar = "\xef\xbd\x9c";  // the full-width bar of DeepSeek's special tokens
  EXPECT_EQ(chat_template("deepseek3").render(conv), "Be brief.\n\n<" + bar + "User" + bar + ">Hi<" + bar + "Assistant" +
                                                         bar + ">Hello<" + bar + "end\xe2\x96\x81of\xe2\x96\x81sentence" +
                                                         bar + "><" + bar + "User" + bar + ">2+2?<" + bar + "Assistant" + bar + ">");
  EXPECT_TRUE(chat_template("deepseek3").adds_bos);
  EXPECT_EQ(chat_template("chatglm4").render(conv),
            "[gMASK]<sop><|system|>\nBe brief.<|user|>\nHi<|assistant|>\nHello<|user|>\n2+2?<|assistant|>\n");
  EXPECT_EQ(chat_template("kimi-k2").render(conv),
            "<|im_system|>system<|im_middle|>Be brief.<|im_end|><|im_user|>user<|im_middle|>Hi<|im_end|>"
            "<|im_assistant|>assistant<|im_middle|>Hello<|im_end|><|im_user|>user<|im_middle|>2+2?<|im_end|>"
            "<|im_assistant|>assistant<|im_middle|>");
  EXPECT_EQ(chat_template("kimi-k2").render({{"tool", "42"}}),
            "<|im_system|>tool<|im_middle|>42<|im_end|><|im_assistant|>assistant<|im_middle|>");
  EXPECT_FALSE(chat_template("kimi-k2").adds_bos);
  // A family's default, and an alias's own where it has one (Kimi-K2 reads as deepseek_v3).
  EXPECT_EQ(default_chat_template("deepseek_v3"), "deepseek3");
  EXPECT_EQ(default_chat_template("deepseek_v2"), "deepseek3");
  EXPECT_EQ(default_chat_template("kimi_k2"), "kimi-k2");
  EXPECT_EQ(default_chat_template("glm4_moe"), "chatglm4");
  EXPECT_EQ(default_chat_template("gpt_oss"), "gpt-oss");
  EXPECT_EQ(default_chat_template("mixtral"), "mistral");
  EXPECT_EQ(default_chat_template("qwen3_moe"), "chatml");
  EXPECT_EQ(default_chat_template("olmoe"), "tulu");
  EXPECT_EQ(default_chat_template("deepseek"), "deepseek");
  EXPECT_EQ(default_chat_template("unknown_family"), "none");
  EXPECT_FALSE(static_cast<bool>(chat_template("none").render));
  EXPECT_THROW(chat_template("mistral").render({{"tool", "x"}}), InvalidArgument);
  EXPECT_THROW(chat_template("nope"), InvalidArgument);
}

// gpt-oss's harmony format as its chat_template.jinja renders it (no tools, default identity and
// reasoning effort; add_generation_prompt): the template's own system message with today's date, a
// first system or developer message as the developer's instructions, earlier answers on the final
// channel, and the reply opened without a channel.
TEST(ChatTemplates, GptOssRendersTheHarmonyFormatAsItsJinja) {
  const auto today = [] {
    char date[16] = {};
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::strftime(date, sizeof date, "%Y-%m-%d", &local);
    return std::string(date);
  };
  const ChatTemplateEntry& t = chat_template("gpt-oss");
  const auto system = [](const std::string& date) {
    return "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
           "Knowledge cutoff: 2024-06\nCurrent date: " + date + "\n\nReasoning: medium\n\n"
           "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";
  };
  // Rendered, with the day before and after (a render across midnight takes either).
  const auto expect_render = [&](const std::vector<ChatMessage>& conv, const std::string& rest) {
    const std::string before = today();
    const std::string out = t.render(conv);
    const std::string after = today();
    EXPECT_TRUE(out == system(before) + rest || out == system(after) + rest) << out;
  };
  expect_render({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "2+2?"}},
                "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>"
                "<|start|>user<|message|>Hi<|end|>"
                "<|start|>assistant<|channel|>final<|message|>Hello<|end|>"
                "<|start|>user<|message|>2+2?<|end|><|start|>assistant");
  expect_render({{"user", "Hi"}}, "<|start|>user<|message|>Hi<|end|><|start|>assistant");
  expect_render({{"developer", "Use French."}, {"user", "Hi"}},
                "<|start|>developer<|message|># Instructions\n\nUse French.\n\n<|end|>"
                "<|start|>user<|message|>Hi<|end|><|start|>assistant");
  expect_render({{"system", ""}, {"user", "Hi"}}, "<|start|>user<|message|>Hi<|end|><|start|>assistant");
  EXPECT_FALSE(t.adds_bos);
  // Where the jinja raises (or drops a message), an error.
  EXPECT_THROW(t.render({{"user", "Hi"}, {"system", "late"}}), InvalidArgument);
  EXPECT_THROW(t.render({{"tool", "42"}}), InvalidArgument);
  EXPECT_THROW(t.render({{"user", "Hi"}, {"assistant", "<|channel|>final<|message|>Hello"}}), InvalidArgument);
  EXPECT_THROW(t.render({{"user", "Hi"}, {"assistant", "<|channel|>analysis<|message|>hm"}}), InvalidArgument);
}

TEST(Prometheus, HistogramIsCumulativeWithSumAndCount) {
  Histogram h({1, 5});
  for (double v : {0.5, 1.0, 3.0, 9.0}) h.observe(v);
  const std::string text = h.render("x_seconds", "help");
  EXPECT_NE(text.find("# TYPE x_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("x_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);  // le is inclusive
  EXPECT_NE(text.find("x_seconds_bucket{le=\"5\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("x_seconds_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("x_seconds_sum 13.5\n"), std::string::npos);
  EXPECT_NE(text.find("x_seconds_count 4\n"), std::string::npos);
}

}  // namespace
}  // namespace ferry::moe
