// The message of the error of type E (a ferry::Error) that `fn` throws; the test fails when it
// throws nothing, and another type propagates (the test errs).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace ferry {

template <typename E = Error, typename Fn>
std::string message_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "nothing thrown";
  return "";
}

}  // namespace ferry
