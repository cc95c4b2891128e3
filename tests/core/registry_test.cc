#include "core/registry.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ferry {
namespace {

// A registry's entry as every kind defines one: name, summary, capabilities, factory.
struct ShapeEntry {
  std::string name;
  std::string summary;
  bool has_corners = false;  // a capability, asked instead of comparing names
  std::function<double(SpecReader&)> make;  // area of a shape built from its spec
};

void register_shapes(Registry<ShapeEntry>& r) {
  r.add({"square", "a square (side)", true,
         [](SpecReader& s) { double a = s.get_double("side", 1); return a * a; }});
  r.add({"circle", "a circle (r)", false,
         [](SpecReader& s) { double a = s.get_double("r", 1); return 3 * a * a; }});
}

double build(const Registry<ShapeEntry>& r, const std::string& text) {
  auto [entry, reader] = r.parse(text);
  double v = entry->make(reader);
  reader.finish();
  return v;
}

TEST(Registry, BuildsBySpecAndListsSortedNames) {
  Registry<ShapeEntry> r("shape");
  register_shapes(r);
  EXPECT_EQ(r.names(), (std::vector<std::string>{"circle", "square"}));
  EXPECT_EQ(r.entries().front().name, "square");  // registration order
  EXPECT_DOUBLE_EQ(build(r, "square:side=3"), 9);
  EXPECT_DOUBLE_EQ(build(r, "circle"), 3);
  EXPECT_TRUE(r.at("square").has_corners);
  EXPECT_FALSE(r.at("circle").has_corners);
  EXPECT_EQ(r.find("triangle"), nullptr);
}

TEST(Registry, UnknownNamesDuplicatesAndUnknownKeysAreInvalidArguments) {
  Registry<ShapeEntry> r("shape");
  register_shapes(r);
  try {
    r.at("triangle");
    ADD_FAILURE() << "unknown name accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "unknown shape 'triangle' (known: circle, square)");
  }
  EXPECT_THROW(register_shapes(r), InvalidArgument);
  EXPECT_FALSE(r.add_if_absent({"square", "again", true, nullptr}));
  EXPECT_THROW(build(r, "square:sid=2"), InvalidArgument);
  EXPECT_THROW(build(r, "triangle:side=2"), InvalidArgument);
}

struct FileEntry {
  std::string name;
  std::string summary;
  std::string positional_key = "path";
};

TEST(Registry, EntriesMayNameAPositionalKey) {
  Registry<FileEntry> r("reader");
  r.add({"csv", "a csv file"});
  auto [entry, reader] = r.parse("CSV:/data/x.csv");
  EXPECT_EQ(entry->name, "csv");
  EXPECT_EQ(reader.get_string("path", ""), "/data/x.csv");
  reader.finish();
  EXPECT_EQ(reader.canonical(), "csv:path=/data/x.csv");
  auto [e2, r2] = r.parse("csv:path=/y,sep=;");
  EXPECT_EQ(e2->name, "csv");
  EXPECT_EQ(r2.get_string("path", ""), "/y");
  EXPECT_THROW(r2.finish(), InvalidArgument);  // sep is unknown to a reader that only asked for path
}

TEST(Registry, ReferencesStayValidAndLookupsAreThreadSafe) {
  Registry<ShapeEntry> r("shape");
  register_shapes(r);
  const ShapeEntry* square = &r.at("square");
  std::thread adder([&] {
    for (int i = 0; i < 200; ++i) r.add({"s" + std::to_string(i), "", false, nullptr});
  });
  for (int i = 0; i < 200; ++i) EXPECT_EQ(r.find("square"), square);
  adder.join();
  EXPECT_EQ(&r.at("square"), square);
  EXPECT_EQ(r.names().size(), 202u);
}

}  // namespace
}  // namespace ferry
