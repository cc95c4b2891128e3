#include "core/plugin.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "core/error.h"

namespace ferry {
namespace {

// The library that holds this function (the Python module, loaded RTLD_LOCAL) joins the global
// scope, so that a plugin's undefined ferry symbols resolve to it. For the executable, whose
// symbols are global already, the reopen finds nothing and does nothing.
void make_own_symbols_global() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&make_own_symbols_global), &self) == 0 || self.dli_fname == nullptr) return;
  if (void* h = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) dlclose(h);
}

}  // namespace

void load_plugin(const std::string& path) {
  namespace fs = std::filesystem;
  static std::mutex mu;
  static std::set<fs::path> loaded;
  std::error_code ec;
  const fs::path file = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec || !fs::is_regular_file(file, ec)) FERRY_THROW(IoError, "plugin ", path, ": no such file");
  std::lock_guard lock(mu);
  if (loaded.count(file)) return;
  make_own_symbols_global();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    FERRY_THROW(IoError, "plugin ", path, ": cannot load it: ", why ? why : "unknown reason");
  }
  using Register = void (*)();
  auto* reg = reinterpret_cast<Register>(dlsym(handle, "ferry_plugin_register"));
  if (reg == nullptr) {
    dlclose(handle);
    FERRY_THROW(InvalidArgument, "plugin ", path, " defines no ferry_plugin_register() (docs/architecture.md, Plugins)");
  }
  reg();  // the library stays loaded: the registries now hold its code
  loaded.insert(file);
}

}  // namespace ferry
