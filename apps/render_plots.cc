#include "apps/render_plots.h"

#include <cstdio>
#include <cstdlib>

namespace ferry::apps {
namespace {

// `text` as one single-quoted shell word.
std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

bool render_plots(const std::vector<PlotScript>& plots, const std::string& who) {
  if (plots.empty()) return true;
  if (!gnuplot_available()) return false;
  for (const auto& p : plots) {
    const std::string cmd = "gnuplot " + shell_quote(p.script) + " 2>" + (p.log.empty() ? "/dev/null" : shell_quote(p.log));
    if (std::system(cmd.c_str()) != 0)
      std::fprintf(stderr, "%s: gnuplot failed on %s%s%s\n", who.c_str(), p.script.c_str(),
                   p.log.empty() ? "" : ", see ", p.log.c_str());
  }
  return true;
}

}  // namespace ferry::apps
