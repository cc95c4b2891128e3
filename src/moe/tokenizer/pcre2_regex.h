// A compiled PCRE2 regex (move-only RAII owner of the pcre2_code and its match context), for the
// pre-tokenizer patterns of tokenizer.json. Compiled in UTF + UCP mode, so that \p{L}, \s, \w
// and case-insensitive groups follow Unicode as the onig / fancy-regex engines of Hugging Face
// tokenizers do; JIT-compiled when PCRE2 has a JIT for this machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::moe {

struct Pcre2Options {
  bool literal = false;                   // the pattern is a plain string (a Split's "String" pattern)
  bool jit = true;                        // JIT-compile when available (same matches, faster)
  std::uint32_t match_limit = 10'000'000; // bounds backtracking per match: a pathological pattern fails, not hangs
  std::uint32_t heap_limit_kib = 262'144; // bounds the interpreter's backtracking memory per match (256 MiB)
};

class Pcre2Regex {
 public:
  // Compiles `pattern`; a pattern PCRE2 rejects is a FormatError naming `origin`, the PCRE2
  // message and the offset.
  Pcre2Regex(const std::string& pattern, const Pcre2Options& options, const std::string& origin);
  ~Pcre2Regex();
  Pcre2Regex(Pcre2Regex&& other) noexcept;
  Pcre2Regex& operator=(Pcre2Regex&& other) noexcept;
  Pcre2Regex(const Pcre2Regex&) = delete;
  Pcre2Regex& operator=(const Pcre2Regex&) = delete;

  // Every non-overlapping match in `text` (which must be valid UTF-8: the caller checks, so
  // PCRE2 does not re-validate the whole subject at each call), leftmost first, as [begin, end)
  // byte offsets. After an empty match the search resumes one character later, as onig's
  // find_iter does. A match that hits the match limit or the JIT stack is a FormatError naming
  // `origin`. Thread-safe: each call has its own match data.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

  bool jit_compiled() const { return jit_; }

 private:
  void reset() noexcept;
  void* code_ = nullptr;     // pcre2_code_8*
  void* context_ = nullptr;  // pcre2_match_context_8*
  bool jit_ = false;
  std::string origin_;
};

}  // namespace ferry::moe
