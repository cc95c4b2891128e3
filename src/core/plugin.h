// Plugins: shared libraries that add entries to ferry's registries (a training strategy, a codec,
// an expert-cache policy, ...) without rebuilding ferry. A plugin is compiled against ferry's
// headers (this tree's, or the installed package's: find_package(ferry)) and defines
//
//     extern "C" void ferry_plugin_register();
//
// which calls the register_*() function of each thing it adds (train::register_strategy, ...).
// It links no ferry library: its ferry symbols are the loading program's (the ferry executable
// exports them; the Python module makes its own visible first), so that it adds to the one
// registry the program uses. Loaded by `ferry train --plugin PATH` on every rank and by
// `ferry.load_plugin(PATH)` in Python. Example: tests/train/plugin/scaled_sgd_plugin.cc.
#pragma once

#include <string>

namespace ferry {

// Loads the plugin at `path` and runs its ferry_plugin_register(), once per file and process (a
// second call with the same file does nothing). IoError naming the file when it is missing or
// cannot be loaded (with the loader's reason, e.g. an undefined symbol); InvalidArgument when it
// defines no ferry_plugin_register. What the registration throws (a name already taken) is
// passed on.
void load_plugin(const std::string& path);

}  // namespace ferry
