#include "apps/cli.h"

#include <cmath>
#include <iostream>
#include <thread>

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

CLI::Validator finite_at_least(double lo) {
  return CLI::Validator(
      [lo](std::string& text) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        if (used != text.size() || !std::isfinite(v) || v < lo)
          return "must be a finite number >= " + CLI::detail::to_string(lo) + ", got '" + text + "'";
        return "";
      },
      "NUMBER>=" + CLI::detail::to_string(lo));
}

CLI::Validator thread_count() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int most = 4 * cores;
  return CLI::Validator(
      [cores, most](std::string& text) -> std::string {
        int v = 0;
        std::size_t used = 0;
        try {
          v = std::stoi(text, &used);
        } catch (const std::exception&) {
          return "'" + text + "' is not a whole number";
        }
        if (used != text.size() || v < 1 || v > most)
          return "must be from 1 to " + std::to_string(most) + " (4 x this machine's " + std::to_string(cores) +
                 " cores), got '" + text + "'";
        return "";
      },
      "1.." + std::to_string(most));
}

}  // namespace ferry::apps
