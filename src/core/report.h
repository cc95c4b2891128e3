// The one writer of benchmark and comparison reports (`ferry compare`, `ferry moe bench`,
// `ferry moe simulate`, bench_codecs): a table of named columns printed as CSV (RFC 4180
// quoting) and as a Markdown table, and gnuplot charts. Library code only writes the data and
// the gnuplot script; running gnuplot is the application's job (apps/render_plots.h), since
// library code does not shell out.
#pragma once

#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ferry {

// CSV quoting of a column: RFC 4180 (only fields holding a comma, a quote or a line break are
// quoted), or every field (a column of specs that readers expect quoted).
enum class CsvQuote { kWhenNeeded, kAlways };
// Markdown alignment of a column: "---" or "---:".
enum class MdAlign { kLeft, kRight };

struct ReportColumn {
  std::string name;  // the CSV header and the Markdown heading
  MdAlign align = MdAlign::kLeft;
  CsvQuote quote = CsvQuote::kWhenNeeded;
};

// Rows of already formatted cells (format_cell() and stream_cell() below format numbers).
class ReportTable {
 public:
  explicit ReportTable(std::vector<ReportColumn> columns);
  // Every column left-aligned, quoted when needed.
  static ReportTable of(const std::vector<std::string>& names);

  // Appends a row of one cell per column (InternalError otherwise).
  void add_row(std::vector<std::string> cells);

  // Header line of the column names, then one line per row, each ending in '\n'.
  std::string csv() const;
  // "| a | b |", the alignment line, then "| x | y |" per row; cells are written as they are.
  std::string markdown() const;

  const std::vector<ReportColumn>& columns() const { return columns_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

 private:
  std::vector<ReportColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// One CSV field: quoted (inner quotes doubled) when `quote` is kAlways or the text holds a
// comma, a quote or a line break.
std::string csv_field(const std::string& text, CsvQuote quote = CsvQuote::kWhenNeeded);

// `value` printed with a printf format ("%.4g", "%.0f") as snprintf prints it ("nan" included).
std::string printf_cell(double value, const char* printf_format);
// As printf_cell, but "" for NaN (an unknown value: a run that failed, a baseline missing).
std::string format_cell(double value, const char* printf_format);
// `value` as `std::ostream <<` prints it (6 significant digits for floating point).
template <typename T>
std::string stream_cell(const T& value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

// A gnuplot script written into a report directory, for the application to render.
struct PlotScript {
  std::string script;  // path of the .gp file
  std::string log;     // where gnuplot's stderr goes; "" = discarded
};

// Lines of y against x, one panel per group side by side (multiplot), every series in every
// panel (in the order first added; a series a panel lacks plots no points), data inline.
class PanelChart {
 public:
  struct Style {
    int panel_width = 520;    // pixels per panel
    int height = 420;         // pixels
    std::string settings;     // gnuplot lines after the layout (axes, labels, key), each ending in '\n'
    std::string title_prefix; // panel title: prefix + the group's name
  };

  // Adds point (x, y) to `series` in panel `panel`.
  void add(const std::string& panel, const std::string& series, double x, double y);
  // The script drawing every panel into `png_path` (pngcairo, noenhanced: names print as they are).
  std::string gnuplot(const std::string& png_path, const Style& style) const;

 private:
  std::vector<std::string> panels_, series_;
  // points_[panel index][series index]
  std::vector<std::vector<std::vector<std::pair<double, double>>>> points_;
};

// Writes `text` to `path` atomically (write_file_atomic); IoError naming the path.
void write_report_file(const std::string& path, const std::string& text);

}  // namespace ferry
