// The comparison macros of core/error.h: both sides formatted by the macro, each operand
// evaluated once, integers of mixed signedness compared by value, NaN refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "core/error.h"
#include "message_of.h"

namespace ferry {
namespace {


TEST(Require, FormatsTheValueTheBoundAndTheName) {
  const int batch = 0;
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_GE(batch, 1, "--batch"); }), "--batch must be at least 1, got 0");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_LE(7, 4, "--algo x: ", "fragments"); }),
            "--algo x: fragments must be at most 4, got 7");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_GT(0.0, 0.0, "--lr"); }), "--lr must be greater than 0, got 0");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_LT(3, 3, "k"); }), "k must be less than 3, got 3");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_EQ(std::string("b"), std::string("a"), "mode"); }), "mode must be a, got b");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_NE(2, 2, "servers"); }), "servers must not be 2, got 2");
}

TEST(Require, RangesNameTheirEnds) {
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_IN(1.5, 0, 1, "[)", "--momentum"); }), "--momentum must be in [0, 1), got 1.5");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_IN(1.0f, 0, 1, "[)", "--momentum"); }), "--momentum must be in [0, 1), got 1");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_IN(0.0, 0, 1, "(]", "topk: ", "ratio"); }), "topk: ratio must be in (0, 1], got 0");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_IN(65536, 0, 65535, "[]", "--port"); }), "--port must be in [0, 65535], got 65536");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_IN(1.0, 0, 1, "()", "f"); }), "f must be in (0, 1), got 1");
  // Each end as its bracket says; a NaN is in no range; mixed signedness by value.
  EXPECT_NO_THROW(FERRY_REQUIRE_IN(0.0, 0, 1, "[)", "x"));
  EXPECT_NO_THROW(FERRY_REQUIRE_IN(1.0, 0, 1, "(]", "x"));
  EXPECT_NO_THROW(FERRY_REQUIRE_IN(1, 1, 1, "[]", "x"));
  EXPECT_THROW(FERRY_REQUIRE_IN(1.0, 0, 1, "[)", "x"), InvalidArgument);
  EXPECT_THROW(FERRY_REQUIRE_IN(std::nan(""), 0, 1, "[]", "x"), InvalidArgument);
  EXPECT_THROW(FERRY_REQUIRE_IN(-1, std::size_t{0}, std::size_t{5}, "[]", "x"), InvalidArgument);
  int calls = 0;
  FERRY_REQUIRE_IN(++calls, 0, 9, "[]", "n");
  EXPECT_EQ(calls, 1);
}

TEST(Require, OperatorFormsWriteTheirOperator) {
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_OP(-1, >=, 0, "--eval-every"); }), "--eval-every must be at least 0, got -1");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_OP(0.0, >, 0, "--algo x: ", "eps"); }), "--algo x: eps must be greater than 0, got 0");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_OP(5, <, 5, "k"); }), "k must be less than 5, got 5");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_OP(3, ==, 4, "n"); }), "n must be 4, got 3");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_FINITE(-1.0, >, 0, "--lr"); }), "--lr must be finite and greater than 0, got -1");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_POSITIVE(-1, "--threshold"); }), "--threshold must be greater than 0, got -1");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_POSITIVE(0.0f, "bucket_mb"); }), "bucket_mb must be greater than 0, got 0");
  EXPECT_NO_THROW(FERRY_REQUIRE_OP(0, >=, 0, "x"));
  EXPECT_NO_THROW(FERRY_REQUIRE_OP(1.5, >, 0, "x"));
  EXPECT_NO_THROW(FERRY_REQUIRE_OP(4, <=, 4, "x"));
  EXPECT_NO_THROW(FERRY_REQUIRE_OP(4, !=, 5, "x"));
  EXPECT_NO_THROW(FERRY_REQUIRE_FINITE(0.0, >=, 0, "x"));
  EXPECT_NO_THROW(FERRY_REQUIRE_POSITIVE(std::size_t{1}, "x"));
  // By value across signedness, as the word forms.
  EXPECT_THROW(FERRY_REQUIRE_OP(-1, >=, std::size_t{0}, "x"), InvalidArgument);
  int calls = 0;
  FERRY_REQUIRE_OP(++calls, >, 0, "n");
  FERRY_REQUIRE_POSITIVE(++calls, "n");
  EXPECT_EQ(calls, 2);
}

TEST(Require, OperatorFormsRefuseWhatIsNotFinite) {
  // An infinity passes ">= 0" as a number but is no setting: every form refuses it and says why.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_OP(inf, >=, 0, "--latency"); }), "--latency must be finite and at least 0, got inf");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_FINITE(inf, >, 0, "--lr"); }), "--lr must be finite and greater than 0, got inf");
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_POSITIVE(inf, "t"); }), "t must be finite and greater than 0, got inf");
  EXPECT_THROW(FERRY_REQUIRE_OP(nan, <=, 1, "x"), InvalidArgument);
  EXPECT_THROW(FERRY_REQUIRE_OP(-inf, <, 0, "x"), InvalidArgument);
  EXPECT_THROW(FERRY_REQUIRE_POSITIVE(nan, "x"), InvalidArgument);
}

TEST(Require, PassingChecksThrowNothing) {
  EXPECT_NO_THROW(FERRY_REQUIRE_GE(1, 1, "a"));
  EXPECT_NO_THROW(FERRY_REQUIRE_LE(1, 1, "a"));
  EXPECT_NO_THROW(FERRY_REQUIRE_GT(2, 1, "a"));
  EXPECT_NO_THROW(FERRY_REQUIRE_LT(1, 2, "a"));
  EXPECT_NO_THROW(FERRY_REQUIRE_EQ(1, 1, "a"));
  EXPECT_NO_THROW(FERRY_REQUIRE_NE(1, 2, "a"));
}

TEST(Require, ThrowsInvalidArgument) {
  EXPECT_THROW(FERRY_REQUIRE_GE(0, 1, "x"), InvalidArgument);
}

TEST(Require, EvaluatesEachOperandOnce) {
  int calls = 0;
  auto next = [&] { return ++calls; };
  FERRY_REQUIRE_GE(next(), 1, "n");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_GE(next(), 5, "n"); }), "n must be at least 5, got 2");
  EXPECT_EQ(calls, 2);
}

TEST(Require, MixedSignednessComparesValues) {
  // -1 >= 0u is true with the built-in conversion (-1 becomes SIZE_MAX); by value it is false.
  const int minus_one = -1;
  const std::size_t zero = 0;
  EXPECT_EQ(message_of([&] { FERRY_REQUIRE_GE(minus_one, zero, "count"); }), "count must be at least 0, got -1");
  EXPECT_NO_THROW(FERRY_REQUIRE_LT(minus_one, zero, "count"));
}

TEST(Require, NanFailsEveryRelation) {
  const double nan = std::nan("");
  EXPECT_THROW(FERRY_REQUIRE_GE(nan, 0.0, "x"), InvalidArgument);
  EXPECT_THROW(FERRY_REQUIRE_LE(nan, 0.0, "x"), InvalidArgument);
  EXPECT_THROW(FERRY_REQUIRE_EQ(nan, nan, "x"), InvalidArgument);
}

TEST(Check, NamesTheExpressionsTheirValuesAndThePlace) {
  const std::size_t weights = 3, grads = 4;
  const std::string m = message_of([&] { FERRY_CHECK_EQ(weights, grads, "key ", 7); });
  EXPECT_NE(m.find("error_test.cc:"), std::string::npos) << m;
  EXPECT_NE(m.find(": check failed: weights == grads (3 vs 4) key 7"), std::string::npos) << m;
  const std::string bare = message_of([&] { FERRY_CHECK_LT(grads, weights); });
  EXPECT_EQ(bare.substr(bare.find("check failed")), "check failed: grads < weights (4 vs 3)");
  EXPECT_THROW(FERRY_CHECK_GE(1, 2), InternalError);
  EXPECT_NO_THROW(FERRY_CHECK_NE(1, 2));
}

}  // namespace
}  // namespace ferry
