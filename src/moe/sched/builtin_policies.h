// The builtin policies' registry entries, each defined in its policy's own file beside its options
// struct and spec reader; register_builtin_policies() (policy_registry.cc) adds them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moe/sched/policy.h"

namespace ferry::moe {

PolicyEntry ondemand_policy_entry();          // ondemand_policy.cc
PolicyEntry lru_policy_entry();               // lru_policy.cc
PolicyEntry static_hot_policy_entry();        // static_hot_policy.cc
PolicyEntry next_gate_policy_entry();         // next_gate_policy.cc
PolicyEntry fiddler_policy_entry();           // fiddler_policy.cc
PolicyEntry moe_infinity_policy_entry();      // moe_infinity_policy.cc
PolicyEntry prescope_policy_entry();          // prescope_policy.cc
PolicyEntry prescope_perfect_policy_entry();  // oracle_policy.cc
PolicyEntry oracle_policy_entry();            // oracle_policy.cc

// The entry of a policy without spec keys that is built from the calibration counts alone
// (static-hot, fiddler, moe-infinity): PolicyType(std::vector<std::uint64_t> expert_counts).
template <class PolicyType>
PolicyEntry counts_policy_entry(std::string name, std::string summary) {
  return {.name = std::move(name),
          .summary = std::move(summary),
          .uses_counts = true,
          .make = [](SpecReader&, const PolicyInputs& inputs) -> std::unique_ptr<Policy> {
            return std::make_unique<PolicyType>(inputs.expert_counts);
          }};
}

}  // namespace ferry::moe
