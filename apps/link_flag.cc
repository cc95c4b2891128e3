#include "apps/link_flag.h"

#include <CLI/CLI.hpp>

#include "comm/link/link_options.h"

namespace ferry::apps {

void add_link_flag(CLI::App& app, std::string& link) {
  app.add_option("--link", link, "emulated NIC per rank, " + comm::link_help())->capture_default_str();
}

}  // namespace ferry::apps
