#include "core/report.h"

#include <algorithm>
#include <cmath>

#include "core/atomic_write.h"
#include "core/error.h"

namespace ferry {

ReportTable::ReportTable(std::vector<ReportColumn> columns) : columns_(std::move(columns)) {}

ReportTable ReportTable::of(const std::vector<std::string>& names) {
  std::vector<ReportColumn> columns;
  for (const auto& n : names) columns.push_back({n});
  return ReportTable(std::move(columns));
}

void ReportTable::add_row(std::vector<std::string> cells) {
  FERRY_CHECK_EQ(cells.size(), columns_.size(), "cells of a row vs columns of the table");
  rows_.push_back(std::move(cells));
}

std::string ReportTable::csv() const {
  std::string out;
  for (std::size_t c = 0; c < columns_.size(); ++c) out += (c ? "," : "") + csv_field(columns_[c].name);
  out += '\n';
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + csv_field(row[c], columns_[c].quote);
    out += '\n';
  }
  return out;
}

std::string ReportTable::markdown() const {
  std::string out = "|";
  for (const auto& col : columns_) out += " " + col.name + " |";
  out += "\n|";
  for (const auto& col : columns_) out += col.align == MdAlign::kRight ? "---:|" : "---|";
  out += '\n';
  for (const auto& row : rows_) {
    out += "|";
    for (const auto& cell : row) out += " " + cell + " |";
    out += '\n';
  }
  return out;
}

std::string csv_field(const std::string& v, CsvQuote quote) {
  if (quote == CsvQuote::kWhenNeeded && v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + '"';
}

std::string printf_cell(double v, const char* f) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string format_cell(double v, const char* f) { return std::isnan(v) ? std::string() : printf_cell(v, f); }

void PanelChart::add(const std::string& panel, const std::string& series, double x, double y) {
  auto index = [](std::vector<std::string>& names, const std::string& name) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
    names.push_back(name);
    return names.size() - 1;
  };
  const std::size_t p = index(panels_, panel), s = index(series_, series);
  if (points_.size() <= p) points_.resize(p + 1);
  if (points_[p].size() <= s) points_[p].resize(s + 1);
  points_[p][s].emplace_back(x, y);
}

std::string PanelChart::gnuplot(const std::string& png_path, const Style& style) const {
  std::ostringstream gp;
  gp << "set terminal pngcairo size " << style.panel_width * panels_.size() << "," << style.height << " noenhanced\n"
     << "set output '" << png_path << "'\n"
     << "set multiplot layout 1," << panels_.size() << "\n"
     << style.settings;
  for (std::size_t p = 0; p < panels_.size(); ++p) {
    gp << "set title '" << style.title_prefix << panels_[p] << "'\nplot ";
    for (std::size_t s = 0; s < series_.size(); ++s)
      gp << (s ? ", " : "") << "'-' using 1:2 with linespoints title '" << series_[s] << "'";
    gp << "\n";
    for (std::size_t s = 0; s < series_.size(); ++s) {
      if (s < points_[p].size())
        for (auto [x, y] : points_[p][s]) gp << x << ' ' << y << '\n';
      gp << "e\n";
    }
  }
  gp << "unset multiplot\n";
  return gp.str();
}

void write_report_file(const std::string& path, const std::string& text) { write_file_atomic(path, text); }

}  // namespace ferry
