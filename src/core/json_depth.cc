#include "core/json_depth.h"

#include "core/error.h"

namespace ferry {

std::size_t json_nesting_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

void require_json_depth(std::string_view text, std::size_t limit, const std::string& what) {
  if (json_nesting_depth(text, limit) > limit)
    FERRY_THROW(FormatError, what, " nests arrays or objects deeper than ", limit, " levels");
}

}  // namespace ferry
