#include "moe/tokenizer/chat_template.h"

#include <algorithm>
#include <ctime>

#include "core/error.h"
#include "core/registry.h"

namespace ferry::moe {

namespace {

Registry<ChatTemplateEntry>& chat_template_registry() {
  static Registry<ChatTemplateEntry> r("chat template");
  return r;
}

void require_role(const ChatMessage& m, std::initializer_list<const char*> roles, const std::string& tmpl) {
  for (const char* r : roles)
    if (m.role == r) return;
  FERRY_THROW(InvalidArgument, "chat template '", tmpl, "' has no place for role '", m.role, "'");
}

// Mixtral-8x7B-Instruct-v0.1's template: "[INST] user [/INST]answer</s>[INST] ...", after BOS: the
// answer follows "[/INST]" exactly as the model generated it (its first SentencePiece token
// carries its own space), so a resent conversation repeats the generated tokens and the prefix
// cache reuses them. A system message is put before the first user message, separated by a blank line (as Mistral's
// later templates do; v0.1's raises an error instead).
std::string render_mistral(const std::vector<ChatMessage>& msgs) {
  std::string out, system;
  for (const auto& m : msgs) {
    require_role(m, {"system", "user", "assistant"}, "mistral");
    if (m.role == "system") {
      system += (system.empty() ? "" : "\n\n") + m.content;
    } else if (m.role == "user") {
      out += "[INST] " + (system.empty() ? m.content : system + "\n\n" + m.content) + " [/INST]";
      system.clear();
    } else {
      out += m.content + "</s>";
    }
  }
  return out;
}

// ChatML (Qwen1.5/2/3-MoE): "<|im_start|>role\ncontent<|im_end|>\n" per message, then
// "<|im_start|>assistant\n". Qwen2's template adds "You are a helpful assistant." when no system
// message is given; so does this one.
std::string render_chatml(const std::vector<ChatMessage>& msgs) {
  std::string out;
  if (msgs.empty() || msgs.front().role != "system") out += "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";
  for (const auto& m : msgs) {
    require_role(m, {"system", "user", "assistant"}, "chatml");
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  return out + "<|im_start|>assistant\n";
}

// OLMoE-1B-7B-Instruct (Tulu): "<|endoftext|>" then "<|system|>\n", "<|user|>\n", "<|assistant|>\n"
// before each message, "\n" after (an assistant message ends with "<|endoftext|>\n"), and
// "<|assistant|>\n" to open the reply.
std::string render_tulu(const std::vector<ChatMessage>& msgs) {
  std::string out = "<|endoftext|>";
  for (const auto& m : msgs) {
    require_role(m, {"system", "user", "assistant"}, "tulu");
    out += "<|" + m.role + "|>\n" + m.content + (m.role == "assistant" ? "<|endoftext|>\n" : "\n");
  }
  return out + "<|assistant|>\n";
}

// deepseek-moe-16b-chat: BOS, then an optional system text followed by "\n\n", "User: content\n\n",
// "Assistant: content<|end▁of▁sentence|>", and "Assistant:" to open the reply.
std::string render_deepseek(const std::vector<ChatMessage>& msgs) {
  std::string out;
  for (const auto& m : msgs) {
    require_role(m, {"system", "user", "assistant"}, "deepseek");
    if (m.role == "system") out += m.content + "\n\n";
    else if (m.role == "user") out += "User: " + m.content + "\n\n";
    else out += "Assistant: " + m.content + "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
  }
  return out + "Assistant:";
}

// DeepSeek-V3/R1 (llama.cpp's deepseek3): BOS, a system text followed by "\n\n", "<｜User｜>content",
// "<｜Assistant｜>content<｜end▁of▁sentence｜>", and "<｜Assistant｜>" to open the reply.
std::string render_deepseek3(const std::vector<ChatMessage>& msgs) {
  const std::string bar = "\xef\xbd\x9c", eos = bar + "end\xe2\x96\x81of\xe2\x96\x81sentence" + bar;
  std::string out;
  for (const auto& m : msgs) {
    require_role(m, {"system", "user", "assistant"}, "deepseek3");
    if (m.role == "system") out += m.content + "\n\n";
    else if (m.role == "user") out += "<" + bar + "User" + bar + ">" + m.content;
    else out += "<" + bar + "Assistant" + bar + ">" + m.content + "<" + eos + ">";
  }
  return out + "<" + bar + "Assistant" + bar + ">";
}

// GLM-4.5/4.6 (llama.cpp's chatglm4): "[gMASK]<sop>", then "<|role|>\ncontent" per message and
// "<|assistant|>\n" to open the reply.
std::string render_chatglm4(const std::vector<ChatMessage>& msgs) {
  std::string out = "[gMASK]<sop>";
  for (const auto& m : msgs) {
    require_role(m, {"system", "user", "assistant"}, "chatglm4");
    out += "<|" + m.role + "|>\n" + m.content;
  }
  return out + "<|assistant|>\n";
}

// Kimi-K2-Instruct (llama.cpp's kimi-k2): "<|im_ROLE|>ROLE<|im_middle|>content<|im_end|>" per message
// (a tool result under im_system), and "<|im_assistant|>assistant<|im_middle|>" to open the reply.
std::string render_kimi_k2(const std::vector<ChatMessage>& msgs) {
  std::string out;
  for (const auto& m : msgs) {
    require_role(m, {"system", "user", "assistant", "tool"}, "kimi-k2");
    const std::string opener = m.role == "tool" ? "system" : m.role;
    out += "<|im_" + opener + "|>" + m.role + "<|im_middle|>" + m.content + "<|im_end|>";
  }
  return out + "<|im_assistant|>assistant<|im_middle|>";
}

// gpt-oss (OpenAI's harmony format) as its chat_template.jinja renders it, with the template's
// defaults (no tools, model_identity and reasoning_effort unset): a system message the template
// writes itself,
//   <|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n
//   Knowledge cutoff: 2024-06\nCurrent date: YYYY-MM-DD\n\nReasoning: medium\n\n
//   # Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>
// then a first system (or developer) message as the developer's instructions,
// "<|start|>developer<|message|># Instructions\n\n{content}\n\n<|end|>", "<|start|>user<|message|>
// {content}<|end|>", an earlier answer on the final channel, "<|start|>assistant<|channel|>final
// <|message|>{content}<|end|>", and "<|start|>assistant" to open the reply (the model writes its
// channel). The date is today's, local time, as the template's strftime_now("%Y-%m-%d") gives it.
// llama.cpp's server renders the same jinja from the file; its built-in fallback (llama-chat.cpp,
// LLM_CHAT_TEMPLATE_OPENAI_MOE) writes neither the system preamble nor the channel and ends answers
// with <|return|>, which the jinja keeps for training only, so it is not followed. Where the
// jinja raises, this throws (an answer holding channel tags, a tool result without a tool call:
// ChatMessage has no tool calls); a later system or developer message, which the jinja drops
// silently, is refused too.
std::string render_gpt_oss(const std::vector<ChatMessage>& msgs) {
  char date[16] = {};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(date, sizeof date, "%Y-%m-%d", &local);
  std::string out = "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
                    "Knowledge cutoff: 2024-06\nCurrent date: " + std::string(date) + "\n\nReasoning: medium\n\n"
                    "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const ChatMessage& m = msgs[i];
    require_role(m, {"system", "developer", "user", "assistant"}, "gpt-oss");
    if (m.role == "system" || m.role == "developer") {
      if (i != 0)
        FERRY_THROW(InvalidArgument, "chat template 'gpt-oss' has no place for a ", m.role, " message after the first");
      if (!m.content.empty()) out += "<|start|>developer<|message|># Instructions\n\n" + m.content + "\n\n<|end|>";
    } else if (m.role == "user") {
      out += "<|start|>user<|message|>" + m.content + "<|end|>";
    } else {
      for (const char* tag : {"<|channel|>analysis<|message|>", "<|channel|>final<|message|>"})
        if (m.content.find(tag) != std::string::npos)
          FERRY_THROW(InvalidArgument, "chat template 'gpt-oss': an assistant message holds '", tag,
                      "' (give the final answer's text only)");
      out += "<|start|>assistant<|channel|>final<|message|>" + m.content + "<|end|>";
    }
  }
  return out + "<|start|>assistant";
}

}  // namespace

void register_builtin_chat_templates() {
  auto& r = chat_template_registry();
  r.add_if_absent({"mistral", "[INST] user [/INST]answer</s> (Mixtral-8x7B-Instruct)", true, render_mistral});
  r.add_if_absent({"chatml", "<|im_start|>role ... <|im_end|> (Qwen2/3-MoE)", false, render_chatml});
  r.add_if_absent({"tulu", "<|user|> ... <|assistant|> (OLMoE-Instruct)", false, render_tulu});
  r.add_if_absent({"deepseek", "User: ... Assistant: (deepseek-moe-16b-chat)", true, render_deepseek});
  r.add_if_absent({"deepseek3", "<｜User｜> ... <｜Assistant｜> (DeepSeek-V3/R1)", true, render_deepseek3});
  r.add_if_absent({"chatglm4", "[gMASK]<sop><|user|> ... <|assistant|> (GLM-4.5/4.6)", false, render_chatglm4});
  r.add_if_absent({"kimi-k2", "<|im_user|>user<|im_middle|> ... <|im_end|> (Kimi-K2-Instruct)", false, render_kimi_k2});
  r.add_if_absent(
      {"gpt-oss", "<|start|>user<|message|> ... <|end|><|start|>assistant (gpt-oss, harmony)", false, render_gpt_oss});
  r.add_if_absent({"none", "no chat template: /v1/chat/completions is refused", false, {}});
}

const ChatTemplateEntry& chat_template(const std::string& name) {
  register_builtin_chat_templates();
  return chat_template_registry().at(name);
}

std::vector<std::string> chat_template_names() {
  register_builtin_chat_templates();
  return chat_template_registry().names();
}

}  // namespace ferry::moe
