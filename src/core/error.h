// Typed errors and FERRY_CHECK: every failure carries the offending values in its message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

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
