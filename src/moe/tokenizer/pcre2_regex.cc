#include "moe/tokenizer/pcre2_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <new>

#include "core/error.h"
#include "moe/tokenizer/utf8.h"

namespace ferry::moe {

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

Pcre2Regex::Pcre2Regex(const std::string& pattern, const Pcre2Options& options, const std::string& origin)
    : origin_(origin) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // Tokenizers' patterns are Unicode patterns over valid UTF-8; a pattern that is not itself
  // valid UTF-8 fails here with PCRE2's message.
  // (PCRE2_LITERAL takes no UCP: a literal has no classes for it to change.)
  const std::uint32_t flags = options.literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &err,
                                   &offset, nullptr);
  if (!code)
    FERRY_THROW(FormatError, origin, ": PCRE2 cannot compile the regex (", pcre2_message(err), " at offset ", offset,
                ")");
  code_ = code;
  if (options.jit) jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  context_ = pcre2_match_context_create(nullptr);
  if (!context_) {
    reset();
    throw std::bad_alloc();
  }
  pcre2_set_match_limit(static_cast<pcre2_match_context*>(context_), options.match_limit);
  pcre2_set_heap_limit(static_cast<pcre2_match_context*>(context_), options.heap_limit_kib);
}

Pcre2Regex::~Pcre2Regex() { reset(); }

void Pcre2Regex::reset() noexcept {
  pcre2_match_context_free(static_cast<pcre2_match_context*>(context_));
  pcre2_code_free(static_cast<pcre2_code*>(code_));
  code_ = context_ = nullptr;
}

Pcre2Regex::Pcre2Regex(Pcre2Regex&& other) noexcept
    : code_(other.code_), context_(other.context_), jit_(other.jit_),
      origin_(std::move(other.origin_)) {
  other.code_ = other.context_ = nullptr;
}

Pcre2Regex& Pcre2Regex::operator=(Pcre2Regex&& other) noexcept {
  if (this != &other) {
    reset();
    code_ = other.code_;
    context_ = other.context_;
    jit_ = other.jit_;
    origin_ = std::move(other.origin_);
    other.code_ = other.context_ = nullptr;
  }
  return *this;
}

std::vector<std::pair<std::size_t, std::size_t>> Pcre2Regex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  auto* code = static_cast<const pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> owned(
      pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  if (!owned) throw std::bad_alloc();
  pcre2_match_data* data = owned.get();
  auto* context = static_cast<pcre2_match_context*>(context_);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0;
  while (start <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, context);
    // The JIT runs on a fixed 32 KiB machine stack; the interpreter keeps its backtracking on the
    // heap (bounded by the match limit), so a long piece that needs more is retried there.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data, context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      FERRY_THROW(FormatError, origin_, ": the regex failed on the text (", pcre2_message(rc), ")");
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
    const std::size_t b = ov[0], e = ov[1];
    // \K in a look-around (which PCRE2 >= 10.38 refuses to compile) could report a match outside
    // the searched range; such a match has no meaning as a piece of text, and would stall the loop.
    if (b < start || e < b || e > text.size())
      FERRY_THROW(FormatError, origin_, ": the regex reported a match outside the searched text (\\K in a look-around?)");
    out.emplace_back(b, e);
    if (e > b) {
      start = e;
    } else if (b >= text.size()) {
      break;
    } else {
      const std::size_t len = utf8_sequence_length(text, b);
      start = b + (len ? len : 1);
    }
  }
  return out;
}

}  // namespace ferry::moe
