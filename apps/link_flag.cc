#include "apps/link_flag.h"

#include <CLI/CLI.hpp>

#include "comm/link/link_options.h"

namespace ferry::apps {

std::string link_flag_help() { return "emulated NIC per rank, " + comm::link_help(); }

void add_link_flag(CLI::App& app, std::string& link) {
  app.add_option("--link", link, link_flag_help())->capture_default_str();
}

}  // namespace ferry::apps
