// How far ferry loads this machine before it asks for --oversubscribe: more ranks or threads
// than this per core look like a hang (`ferry train`, `ferry run`, the MoE thread flags).
#pragma once

#include <algorithm>
#include <string>
#include <thread>

#include "core/error.h"

namespace ferry {

inline constexpr int kMaxRanksPerCore = 8;
inline constexpr int kMaxThreadsPerCore = 4;

// The cores this process may use (at least 1).
inline int machine_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Throws InvalidArgument "<ranks><what> on C cores is more than 8 per core: give --oversubscribe ..."
// unless `oversubscribe`; `what` names the flags, e.g. " ranks (--np 4 + --servers 1)".
inline void require_ranks_fit(int ranks, const std::string& what, bool oversubscribe) {
  FERRY_REQUIRE(oversubscribe || ranks <= kMaxRanksPerCore * machine_cores(), ranks, what, " on ", machine_cores(),
                " cores is more than ", kMaxRanksPerCore, " per core: give --oversubscribe to run it anyway");
}

}  // namespace ferry
