// Names of a registry's entries filtered by a capability, e.g. the policies a routing trace can
// drive: names_where(registry, [](const PolicyEntry& e) { return !e.needs_routers; }).
#pragma once

#include <string>
#include <vector>

#include "core/registry.h"

namespace ferry {

// Sorted, the names of the entries for which `keep(entry)` is true.
template <typename Entry, typename Keep>
std::vector<std::string> names_where(const Registry<Entry>& registry, Keep keep) {
  std::vector<std::string> out;
  for (const std::string& name : registry.names())
    if (keep(registry.at(name))) out.push_back(name);
  return out;
}

}  // namespace ferry
