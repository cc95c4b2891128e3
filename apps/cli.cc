#include "apps/cli.h"

#include <cmath>
#include <iostream>
#include <sstream>

#include "core/machine_limits.h"

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

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

namespace {

// A validator that parses the whole text with `parse` (std::stod / std::stoi) and accepts it
// when `ok`; `expected` says what it wants in the error and the help.
template <typename Parse, typename Ok>
CLI::Validator number_validator(Parse parse, Ok ok, std::string expected, std::string help) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::size_t used = 0;
        try {
          if (ok(parse(text, &used)) && used == text.size()) return "";
        } catch (const std::exception&) {
        }
        return "must be " + expected + ", got '" + text + "'";
      },
      help);
}

}  // namespace

CLI::Validator finite_at_least(double lo) {
  return number_validator([](const std::string& t, std::size_t* used) { return std::stod(t, used); },
                          [lo](double v) { return std::isfinite(v) && v >= lo; },
                          "a finite number >= " + CLI::detail::to_string(lo), "NUMBER>=" + CLI::detail::to_string(lo));
}

CLI::Validator thread_count() {
  const int cores = machine_cores();
  const int most = kMaxThreadsPerCore * cores;
  return number_validator([](const std::string& t, std::size_t* used) { return std::stoi(t, used); },
                          [most](int v) { return v >= 1 && v <= most; },
                          "from 1 to " + std::to_string(most) + " (" + std::to_string(kMaxThreadsPerCore) + " x this machine's " + std::to_string(cores) +
                              " cores)",
                          "1.." + std::to_string(most));
}

}  // namespace ferry::apps
