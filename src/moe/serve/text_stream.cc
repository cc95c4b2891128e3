#include "moe/serve/text_stream.h"

#include <algorithm>

namespace ferry::moe {

std::size_t utf8_complete_prefix(const std::string& text) {
  // Walk back over at most 3 continuation bytes to the lead byte of the last character.
  const std::size_t n = text.size();
  std::size_t i = n, back = 0;
  while (i > 0 && back < 3 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) --i, ++back;
  if (i == 0) return n;
  const auto lead = static_cast<unsigned char>(text[i - 1]);
  const std::size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
  return back + 1 < len ? i - 1 : n;
}

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stops)
    : tokenizer_(tokenizer), stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

bool TextStream::push(std::int32_t token) {
  if (stopped_) return false;
  ids_.push_back(token);
  // The whole text again: a tokenizer may join a token with the one before (SentencePiece's
  // leading space, byte fallback), so decoding token by token is not the same text.
  text_ = tokenizer_.decode(ids_);
  std::size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, text_.find(s));
  if (cut == std::string::npos) return true;
  text_.resize(cut);
  stopped_ = true;
  return false;
}

std::size_t TextStream::safe_end() const {
  if (stopped_) return text_.size();
  std::size_t end = text_.size();
  for (const auto& s : stops_)  // the longest suffix of text_ that is a proper prefix of a stop string
    for (std::size_t k = std::min(s.size() - 1, text_.size()); k > 0; --k)
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        end = std::min(end, text_.size() - k);
        break;
      }
  return utf8_complete_prefix(text_.substr(0, end));
}

std::string TextStream::take() {
  const std::size_t end = safe_end();
  if (end <= sent_) return {};
  std::string out = text_.substr(sent_, end - sent_);
  sent_ = end;
  return out;
}

std::string TextStream::finish() {
  std::string out = sent_ < text_.size() ? text_.substr(sent_) : std::string();
  sent_ = text_.size();
  return out;
}

}  // namespace ferry::moe
