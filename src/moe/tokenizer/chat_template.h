// Chat templates: how a list of {role, content} messages becomes one prompt, per model family, as
// the families' own tokenizer_config.json chat_template renders it (the text, before tokenization;
// a tokenizer.json model maps special-token text such as <|im_start|> to its ids, and the
// tokenizer's BOS id is prepended when the template asks for it). One registry entry
// (core/registry.h) per template; a model family's entry names its default (ModelFamily::chat_template,
// default_chat_template(), moe/model/family.h), which `ferry moe serve --chat-template NAME`
// overrides. Adding a template is one entry in register_builtin_chat_templates().
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ferry::moe {

struct ChatMessage {
  std::string role;     // system, user or assistant (and what a template names: tool, developer)
  std::string content;
};

struct ChatTemplateEntry {
  std::string name;
  std::string summary;                  // one line: the format, and its source
  bool adds_bos = false;                // the prompt starts with the tokenizer's BOS token
  // Renders the conversation and the opening of the assistant's reply. Throws InvalidArgument for
  // a role the template has no place for.
  std::function<std::string(const std::vector<ChatMessage>&)> render = {};
};

// mistral (Mixtral), chatml (Qwen2/3-MoE), tulu (OLMoE), deepseek, deepseek3 (DeepSeek-V3/R1), chatglm4
// (GLM-4.5), kimi-k2, gpt-oss, none. Idempotent.
void register_builtin_chat_templates();
// The entry of `name`; InvalidArgument listing the known ones for an unknown name.
const ChatTemplateEntry& chat_template(const std::string& name);
std::vector<std::string> chat_template_names();

}  // namespace ferry::moe
