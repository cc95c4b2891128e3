// `ferry units 10Gbps 50us 24GiB`: shows how ferry reads a quantity (and checks it).
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/cli.h"
#include "core/units.h"

namespace ferry::apps {

int run_units(int argc, char** argv) {
  CLI::App app{"Parse quantities the way every ferry flag does", "ferry units"};
  init_app(app);
  std::vector<std::string> items;
  app.add_option("quantity", items, "e.g. 10Gbps, 50us, 24GiB")->required();
  parse_command_line(app, argc, argv);
  for (const auto& s : items) {
    if (s.find("ps") != std::string::npos || s.find("/s") != std::string::npos) {
      double b = parse_bandwidth_bytes_per_s(s);
      std::printf("%s = %.6g bytes/s (%s)\n", s.c_str(), b, format_bandwidth(b).c_str());
    } else if (s.find("B") != std::string::npos) {
      std::printf("%s = %llu bytes\n", s.c_str(), static_cast<unsigned long long>(parse_bytes(s)));
    } else {
      double d = parse_duration_s(s);
      std::printf("%s = %.9g s (%s)\n", s.c_str(), d, format_duration(d).c_str());
    }
  }
  return 0;
}

}  // namespace ferry::apps
