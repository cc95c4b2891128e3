#include "core/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace ferry {
namespace {

TEST(CsvField, QuotesOnlyWhatNeedsItAndDoublesInnerQuotes) {
  EXPECT_EQ(csv_field("ssgd"), "ssgd");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("1Gbps,50us"), "\"1Gbps,50us\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("none", CsvQuote::kAlways), "\"none\"");
  EXPECT_EQ(csv_field("a\"b", CsvQuote::kAlways), "\"a\"\"b\"");
}

TEST(ReportTable, CsvHasTheHeaderAndOneLinePerRowQuotedPerColumn) {
  ReportTable t({{"link"}, {"codec", MdAlign::kLeft, CsvQuote::kAlways}, {"n", MdAlign::kRight}});
  t.add_row({"1Gbps,50us", "dgc:ratio=0.01,momentum=0.9", "3"});
  t.add_row({"none", "twobit", ""});
  EXPECT_EQ(t.csv(),
            "link,codec,n\n"
            "\"1Gbps,50us\",\"dgc:ratio=0.01,momentum=0.9\",3\n"
            "none,\"twobit\",\n");
}

TEST(ReportTable, MarkdownAlignsAndKeepsCellsAsGiven) {
  ReportTable t({{"algo"}, {"samples/s", MdAlign::kRight}, {"link"}});
  t.add_row({"ssgd", "1200", "1Gbps,50us"});
  t.add_row({"cdsgd", "", "10Gbps"});
  EXPECT_EQ(t.markdown(),
            "| algo | samples/s | link |\n"
            "|---|---:|---|\n"
            "| ssgd | 1200 | 1Gbps,50us |\n"
            "| cdsgd |  | 10Gbps |\n");
  EXPECT_EQ(ReportTable::of({"a"}).markdown(), "| a |\n|---|\n");
}

TEST(ReportTable, ARowOfTheWrongWidthIsABug) {
  ReportTable t = ReportTable::of({"a", "b"});
  EXPECT_THROW(t.add_row({"1"}), InternalError);
  EXPECT_THROW(t.add_row({"1", "2", "3"}), InternalError);
  EXPECT_TRUE(t.rows().empty());
}

TEST(ReportCells, FormatLikePrintfAndOstream) {
  EXPECT_EQ(format_cell(1234.5678, "%.4g"), "1235");
  EXPECT_EQ(format_cell(NAN, "%.4g"), "");  // unknown: an empty cell
  EXPECT_EQ(printf_cell(NAN, "%.1f"), "nan");
  EXPECT_EQ(printf_cell(12.345, "%.1f%%"), "12.3%");
  EXPECT_EQ(stream_cell(0.1 + 0.2), "0.3");  // six significant digits, as ofstream << double
  EXPECT_EQ(stream_cell(1234567.0), "1.23457e+06");
  EXPECT_EQ(stream_cell(std::uint64_t{18446744073709551615ull}), "18446744073709551615");
}

TEST(PanelChart, OnePanelPerGroupEverySeriesInEveryPanel) {
  PanelChart c;
  c.add("25%", "lru", 1, 10.5);
  c.add("25%", "lru", 4, 30);
  c.add("25%", "ondemand", 1, 5);
  c.add("50%", "ondemand", 1, 7);
  PanelChart::Style style;
  style.panel_width = 100;
  style.height = 50;
  style.settings = "set grid\n";
  style.title_prefix = "budget ";
  EXPECT_EQ(c.gnuplot("/o/x.png", style),
            "set terminal pngcairo size 200,50 noenhanced\n"
            "set output '/o/x.png'\n"
            "set multiplot layout 1,2\n"
            "set grid\n"
            "set title 'budget 25%'\n"
            "plot '-' using 1:2 with linespoints title 'lru', '-' using 1:2 with linespoints title 'ondemand'\n"
            "1 10.5\n4 30\ne\n1 5\ne\n"
            "set title 'budget 50%'\n"
            "plot '-' using 1:2 with linespoints title 'lru', '-' using 1:2 with linespoints title 'ondemand'\n"
            "e\n1 7\ne\n"
            "unset multiplot\n");
}

}  // namespace
}  // namespace ferry
