#include "apps/cli.h"

#include <iostream>

namespace ferry::apps {

void init_app(CLI::App& app) { app.option_defaults()->always_capture_default(); }

void parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    // CLI11's help() descends into the subcommand that received --help.
    std::cout << app.help();
    throw;
  } catch (const CLI::CallForAllHelp& e) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    throw;
  }
}

std::string choices(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " | ") + n;
  return out;
}

}  // namespace ferry::apps
