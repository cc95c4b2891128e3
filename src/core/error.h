// Typed errors and FERRY_CHECK: every failure carries the offending values in its message.
#pragma once

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ferry {

// Base of every error ferry throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A flag, option or configuration the user gave is invalid (exit code 2 at the CLI).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};
// A file could not be opened, read or written.
class IoError : public Error {
 public:
  using Error::Error;
};
// Bytes were read but do not have the expected format (corrupt file, bad payload).
class FormatError : public Error {
 public:
  using Error::Error;
};
// A blocking wait ran past its deadline.
class TimeoutError : public Error {
 public:
  using Error::Error;
};
// An internal invariant was broken: a bug in ferry, not in the input.
class InternalError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// The comparisons of the FERRY_*_GE/... macros: integers of mixed signedness compare by value
// (std::cmp_*), everything else with its own operator (a NaN fails every one of them).
enum class Relation { kEq, kNe, kLt, kLe, kGt, kGe };
template <typename A, typename B>
constexpr bool holds(Relation r, const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && !std::is_same_v<A, bool> && !std::is_same_v<B, bool>) {
    switch (r) {
      case Relation::kEq: return std::cmp_equal(a, b);
      case Relation::kNe: return std::cmp_not_equal(a, b);
      case Relation::kLt: return std::cmp_less(a, b);
      case Relation::kLe: return std::cmp_less_equal(a, b);
      case Relation::kGt: return std::cmp_greater(a, b);
      case Relation::kGe: return std::cmp_greater_equal(a, b);
    }
  } else {
    switch (r) {
      case Relation::kEq: return a == b;
      case Relation::kNe: return a != b;
      case Relation::kLt: return a < b;
      case Relation::kLe: return a <= b;
      case Relation::kGt: return a > b;
      case Relation::kGe: return a >= b;
    }
  }
  return false;
}
// The one wording of every requirement, whichever macro checks it: "--batch must be at least 1,
// got 0", "--lr must be finite and greater than 0, got inf".
constexpr const char* relation_words(Relation r) {
  switch (r) {
    case Relation::kEq: return "";
    case Relation::kNe: return "other than ";
    case Relation::kLt: return "less than ";
    case Relation::kLe: return "at most ";
    case Relation::kGt: return "greater than ";
    case Relation::kGe: return "at least ";
  }
  return "";
}
inline std::string requirement_words(Relation r) {
  return r == Relation::kNe ? " must not be " : std::string(" must be ") + relation_words(r);
}
// The ranges of FERRY_REQUIRE_IN: "[)" holds lo <= v < hi, "(]" lo < v <= hi, "[]" and "()"
// both ends or neither (a NaN is in none).
template <typename V, typename L, typename H>
constexpr bool in_range(const V& v, const L& lo, const H& hi, const char (&ends)[3]) {
  return holds(ends[0] == '[' ? Relation::kGe : Relation::kGt, v, lo) &&
         holds(ends[1] == ']' ? Relation::kLe : Relation::kLt, v, hi);
}
constexpr bool valid_ends(const char (&ends)[3]) {
  return (ends[0] == '[' || ends[0] == '(') && (ends[1] == ']' || ends[1] == ')');
}
// The operator of FERRY_REQUIRE_OP, _FINITE and _POSITIVE, as written at the call site.
constexpr bool valid_operator(std::string_view op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}
constexpr Relation relation_of(std::string_view op) {
  if (op == "==") return Relation::kEq;
  if (op == "!=") return Relation::kNe;
  if (op == "<") return Relation::kLt;
  if (op == "<=") return Relation::kLe;
  if (op == ">") return Relation::kGt;
  return Relation::kGe;
}
template <typename V>
bool is_finite(const V& v) {
  if constexpr (std::is_floating_point_v<V>) return std::isfinite(v);
  return true;
}
// How the operator forms word their requirement, as the others do: " must be at least 0", or
// " must be finite and greater than 0" (always, or for a value that is not finite).
enum class BoundWords { kOperator, kFiniteOperator };
template <typename B>
std::string bound_words(BoundWords words, bool finite, const char* op, const B& bound) {
  if (words == BoundWords::kFiniteOperator || !finite)
    return concat(" must be finite and ", relation_words(relation_of(op)), bound);
  return concat(requirement_words(relation_of(op)), bound);
}
constexpr const char* relation_symbol(Relation r) {
  switch (r) {
    case Relation::kEq: return " == ";
    case Relation::kNe: return " != ";
    case Relation::kLt: return " < ";
    case Relation::kLe: return " <= ";
    case Relation::kGt: return " > ";
    case Relation::kGe: return " >= ";
  }
  return " ? ";
}
}  // namespace detail

}  // namespace ferry

// Throws `Type` with the streamed arguments as message.
#define FERRY_THROW(Type, ...) throw Type(::ferry::detail::concat(__VA_ARGS__))

// Always-on invariant check; a failure is a bug and names the condition and the place.
#define FERRY_CHECK(cond, ...)                                                         \
  do {                                                                                 \
    if (!(cond))                                                                       \
      throw ::ferry::InternalError(::ferry::detail::concat(                            \
          __FILE__, ":", __LINE__, ": check failed: " #cond " " __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

// Check of user input: a failure throws InvalidArgument with the given message.
#define FERRY_REQUIRE(cond, ...)                                           \
  do {                                                                     \
    if (!(cond)) throw ::ferry::InvalidArgument(::ferry::detail::concat(__VA_ARGS__)); \
  } while (0)

// Comparisons that format both sides themselves (as gloo's GLOO_ENFORCE_EQ). Each operand is
// evaluated once.
//
// User input: FERRY_REQUIRE_GE(o.batch, 1, "--batch") throws
//   InvalidArgument("--batch must be at least 1, got 0")
// (_EQ "must be B", _NE "must not be B", _LT "must be less than B", _LE "must be at most B",
// _GT "must be greater than B"); the trailing arguments name the value and are streamed.
#define FERRY_REQUIRE_CMP_(rel, value, bound, ...)                                                         \
  do {                                                                                                    \
    const auto& ferry_value_ = (value);                                                                   \
    const auto& ferry_bound_ = (bound);                                                                   \
    if (!::ferry::detail::holds(rel, ferry_value_, ferry_bound_))                                         \
      throw ::ferry::InvalidArgument(::ferry::detail::concat(                                             \
          __VA_ARGS__, ::ferry::detail::requirement_words(rel), ferry_bound_, ", got ", ferry_value_));   \
  } while (0)
#define FERRY_REQUIRE_EQ(value, bound, ...) FERRY_REQUIRE_CMP_(::ferry::detail::Relation::kEq, value, bound, __VA_ARGS__)
#define FERRY_REQUIRE_NE(value, bound, ...) FERRY_REQUIRE_CMP_(::ferry::detail::Relation::kNe, value, bound, __VA_ARGS__)
#define FERRY_REQUIRE_LT(value, bound, ...) FERRY_REQUIRE_CMP_(::ferry::detail::Relation::kLt, value, bound, __VA_ARGS__)
#define FERRY_REQUIRE_LE(value, bound, ...) FERRY_REQUIRE_CMP_(::ferry::detail::Relation::kLe, value, bound, __VA_ARGS__)
#define FERRY_REQUIRE_GT(value, bound, ...) FERRY_REQUIRE_CMP_(::ferry::detail::Relation::kGt, value, bound, __VA_ARGS__)
#define FERRY_REQUIRE_GE(value, bound, ...) FERRY_REQUIRE_CMP_(::ferry::detail::Relation::kGe, value, bound, __VA_ARGS__)

// The same with the relation written as its operator (worded as above in the message); a value
// that is not finite (a NaN or an infinity) fails them all:
// FERRY_REQUIRE_OP(o.eval_every, >=, 0, "--eval-every") throws
//   InvalidArgument("--eval-every must be at least 0, got -1"), and for an infinity
//   InvalidArgument("--latency must be finite and at least 0, got inf");
// FERRY_REQUIRE_FINITE(o.lr, >, 0, "--lr") says "finite and" whatever the value:
//   InvalidArgument("--lr must be finite and greater than 0, got -1");
// FERRY_REQUIRE_POSITIVE(o.threshold, "--threshold") is FERRY_REQUIRE_OP(o.threshold, >, 0, "--threshold"):
//   "--threshold must be greater than 0, got -1".
#define FERRY_REQUIRE_OP_(words, value, op, bound, ...)                                                   \
  do {                                                                                                    \
    static_assert(::ferry::detail::valid_operator(#op), "FERRY_REQUIRE_OP: op must be ==, !=, <, <=, > or >="); \
    const auto& ferry_value_ = (value);                                                                   \
    const auto& ferry_bound_ = (bound);                                                                   \
    const bool ferry_finite_ = ::ferry::detail::is_finite(ferry_value_);                                  \
    if (!(ferry_finite_ && ::ferry::detail::holds(::ferry::detail::relation_of(#op), ferry_value_, ferry_bound_))) \
      throw ::ferry::InvalidArgument(::ferry::detail::concat(                                             \
          __VA_ARGS__, ::ferry::detail::bound_words(words, ferry_finite_, #op, ferry_bound_), ", got ", ferry_value_)); \
  } while (0)
#define FERRY_REQUIRE_OP(value, op, bound, ...) \
  FERRY_REQUIRE_OP_(::ferry::detail::BoundWords::kOperator, value, op, bound, __VA_ARGS__)
#define FERRY_REQUIRE_FINITE(value, op, bound, ...) \
  FERRY_REQUIRE_OP_(::ferry::detail::BoundWords::kFiniteOperator, value, op, bound, __VA_ARGS__)
#define FERRY_REQUIRE_POSITIVE(value, ...) FERRY_REQUIRE_OP(value, >, 0, __VA_ARGS__)

// A range: FERRY_REQUIRE_IN(o.momentum, 0, 1, "[)", "--momentum") throws
//   InvalidArgument("--momentum must be in [0, 1), got 1.5")
// `ends` says which ends belong to the range: "[)", "(]", "[]" or "()".
#define FERRY_REQUIRE_IN(value, lo, hi, ends, ...)                                                          \
  do {                                                                                                    \
    static_assert(::ferry::detail::valid_ends(ends), "FERRY_REQUIRE_IN: ends must be [), (], [] or ()");   \
    const auto& ferry_value_ = (value);                                                                   \
    const auto& ferry_lo_ = (lo);                                                                         \
    const auto& ferry_hi_ = (hi);                                                                         \
    if (!::ferry::detail::in_range(ferry_value_, ferry_lo_, ferry_hi_, ends))                             \
      throw ::ferry::InvalidArgument(::ferry::detail::concat(__VA_ARGS__, " must be in ", (ends)[0], ferry_lo_, \
                                                             ", ", ferry_hi_, (ends)[1], ", got ", ferry_value_)); \
  } while (0)

// Invariants: FERRY_CHECK_EQ(w.size(), grad.size(), "key ", key) throws
//   InternalError("file.cc:17: check failed: w.size() == grad.size() (3 vs 4) key 7").
#define FERRY_CHECK_CMP_(rel, a, b, ...)                                                                   \
  do {                                                                                                    \
    const auto& ferry_a_ = (a);                                                                           \
    const auto& ferry_b_ = (b);                                                                           \
    if (!::ferry::detail::holds(rel, ferry_a_, ferry_b_))                                                 \
      throw ::ferry::InternalError(::ferry::detail::concat(                                               \
          __FILE__, ":", __LINE__, ": check failed: ", #a, ::ferry::detail::relation_symbol(rel), #b, " (",  \
          ferry_a_, " vs ", ferry_b_, ")" __VA_OPT__(, " ", ) __VA_ARGS__));                             \
  } while (0)
#define FERRY_CHECK_EQ(a, b, ...) FERRY_CHECK_CMP_(::ferry::detail::Relation::kEq, a, b __VA_OPT__(, ) __VA_ARGS__)
#define FERRY_CHECK_NE(a, b, ...) FERRY_CHECK_CMP_(::ferry::detail::Relation::kNe, a, b __VA_OPT__(, ) __VA_ARGS__)
#define FERRY_CHECK_LT(a, b, ...) FERRY_CHECK_CMP_(::ferry::detail::Relation::kLt, a, b __VA_OPT__(, ) __VA_ARGS__)
#define FERRY_CHECK_LE(a, b, ...) FERRY_CHECK_CMP_(::ferry::detail::Relation::kLe, a, b __VA_OPT__(, ) __VA_ARGS__)
#define FERRY_CHECK_GT(a, b, ...) FERRY_CHECK_CMP_(::ferry::detail::Relation::kGt, a, b __VA_OPT__(, ) __VA_ARGS__)
#define FERRY_CHECK_GE(a, b, ...) FERRY_CHECK_CMP_(::ferry::detail::Relation::kGe, a, b __VA_OPT__(, ) __VA_ARGS__)
