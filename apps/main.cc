#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/command.h"
#include "core/error.h"
#include "core/excerpt.h"

namespace {

void print_usage() {
  std::printf("ferry — moves fewer bytes, and never waits for the ones it moves.\n\n"
              "usage: ferry <command> [flags]   (ferry <command> --help for its flags)\n\ncommands:\n");
  for (const auto& c : ferry::apps::commands()) std::printf("  %-10s %s\n", c.name, c.summary);
}

// An error as one bounded line, whatever it echoes (the sites bound each string they echo with
// ferry::excerpt; this holds for the rest, e.g. a library's message quoting its input).
std::string one_line(const char* message) { return ferry::excerpt(message, 4 * ferry::kExcerptBytes + 1024); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : ferry::apps::commands()) {
    if (c.name != std::string(argv[1])) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return 0;  // --help
      std::fprintf(stderr, "ferry %s: error: %s\n", argv[1], e.what());
      return 2;
    } catch (const ferry::InvalidArgument& e) {
      std::fprintf(stderr, "ferry %s: error: %s\n", argv[1], one_line(e.what()).c_str());
      return 2;
    } catch (const ferry::IoError& e) {
      std::fprintf(stderr, "ferry %s: error: %s\n", argv[1], one_line(e.what()).c_str());
      return 2;
    } catch (const ferry::FormatError& e) {
      std::fprintf(stderr, "ferry %s: error: %s\n", argv[1], one_line(e.what()).c_str());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ferry %s: failed: %s\n", argv[1], one_line(e.what()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "ferry: error: unknown command '%s' (see ferry --help)\n", argv[1]);
  return 2;
}
