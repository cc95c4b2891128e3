// json_nesting_depth(): counts arrays and objects, not brackets inside strings; stops past the limit.
#include "core/json_depth.h"

#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace ferry {
namespace {

TEST(JsonDepth, CountsNestingNotStrings) {
  EXPECT_EQ(json_nesting_depth("1", 10), 0u);
  EXPECT_EQ(json_nesting_depth("[[1], {\"a\": [2]}]", 10), 3u);
  EXPECT_EQ(json_nesting_depth(R"({"s": "[[[[\"{{"})", 10), 1u);  // brackets and an escaped quote in a string
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(json_nesting_depth(deep, 64), 65u);  // stops one past the limit
  EXPECT_THROW(require_json_depth(deep, 256, "config 'x'"), FormatError);
  try {
    require_json_depth(deep, 256, "config 'x'");
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "config 'x' nests arrays or objects deeper than 256 levels");
  }
  EXPECT_NO_THROW(require_json_depth("[[]]", 2, "x"));
}

}  // namespace
}  // namespace ferry
