// Drawing the plots a report wrote (core/report.h): the one place that runs gnuplot. Library code
// only writes data and scripts; the programs (`ferry`, bench_codecs) call this.
#pragma once

#include <string>
#include <vector>

#include "core/report.h"

namespace ferry::apps {

// Whether a gnuplot executable is on PATH.
bool gnuplot_available();

// Runs gnuplot on each script, when it is installed. A failing script is a warning on stderr
// ("<who>: gnuplot failed on SCRIPT[, see LOG]"), not an error: the data and the script stay.
// Returns false when gnuplot is not installed (nothing drawn).
bool render_plots(const std::vector<PlotScript>& plots, const std::string& who);

}  // namespace ferry::apps
