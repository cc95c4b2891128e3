// Shared by the fuzz harnesses: what counts as a clean rejection of bad input, and invariant
// checks that abort (so libFuzzer keeps the input) when a parser accepts something it must not.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "core/error.h"

namespace ferry::fuzz {

[[noreturn]] inline void fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
  std::abort();
}

// Runs `parse()`. Bad input must surface as one of the `Allowed` ferry errors (returns false);
// anything else escaping the parser (an InternalError from FERRY_CHECK, a JSON library
// exception, std::length_error, ...) is a bug: it is printed and the process aborts.
template <typename... Allowed, typename F>
bool parses(F&& parse) {
  try {
    parse();
    return true;
  } catch (const std::exception& e) {
    if ((dynamic_cast<const Allowed*>(&e) || ...)) return false;
    std::fprintf(stderr, "fuzz: unexpected exception %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

}  // namespace ferry::fuzz

#define FERRY_FUZZ_ASSERT(cond)                                                 \
  do {                                                                          \
    if (!(cond)) ::ferry::fuzz::fail(#cond, __FILE__, __LINE__);                \
  } while (0)
