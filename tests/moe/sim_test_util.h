// Shared by the simulator and scheduler tests: the hardware profile they time against.
#pragma once

#include "moe/sim/time_model.h"

namespace ferry::moe::testing {

// The built-in A100 (PCIe 4) profile.
inline HardwareProfile a100() { return find_profile(builtin_hardware_profiles(), "a100-pcie4"); }

}  // namespace ferry::moe::testing
