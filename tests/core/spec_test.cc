#include "core/spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace ferry {
namespace {

// Expects InvalidArgument whose message contains `needle`.
template <class F>
void expect_invalid(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected an error containing '" << needle << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' lacks '" << needle << "'";
  }
}

TEST(Spec, ValuesMayHoldColonsAndEqualsSoSpecsNest) {
  Spec s = Spec::parse("PreScope:window=3,predictor=llapor:dir=/tmp/a=b", "policy");
  EXPECT_EQ(s.name, "prescope");
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[1].first, "predictor");
  EXPECT_EQ(s.params[1].second, "llapor:dir=/tmp/a=b");
  Spec inner = Spec::parse(s.params[1].second);
  EXPECT_EQ(inner.name, "llapor");
  EXPECT_EQ(inner.params.at(0).second, "/tmp/a=b");
  EXPECT_EQ(s.str(), "prescope:window=3,predictor=llapor:dir=/tmp/a=b");
  EXPECT_EQ(Spec::parse("lru").str(), "lru");
}

TEST(Spec, APositionalKeyTakesTheTextAfterTheColon) {
  Spec a = Spec::parse("llapor:/models/p,q=1", "predictor", "dir");
  ASSERT_EQ(a.params.size(), 1u);
  EXPECT_EQ(a.params[0].first, "dir");
  EXPECT_EQ(a.params[0].second, "/models/p,q=1");  // all of it: paths may hold ',' and '='
  Spec b = Spec::parse("llapor:dir=/models/p", "predictor", "dir");
  EXPECT_EQ(b.params.at(0).second, "/models/p");
  Spec c = Spec::parse("prescope:window=2,predictor=llapor:/m", "policy", "predictor");
  EXPECT_EQ(c.params.size(), 2u);
  Spec d = Spec::parse("prescope:llapor:/m", "policy", "predictor");
  EXPECT_EQ(d.params.at(0).first, "predictor");
  EXPECT_EQ(d.params.at(0).second, "llapor:/m");
  EXPECT_THROW(Spec::parse("llapor:/models/p"), InvalidArgument);  // no positional key: key=value only
  EXPECT_THROW(Spec::parse("llapor: ", "predictor", "dir"), InvalidArgument);
}

TEST(Spec, CommaSplitListsAreJoinedBackIntoSpecs) {
  const std::vector<std::string> split = {"lru", "prescope:window=2", "predictor=cooccurrence", "ondemand",
                                          "next-gate:lookahead=2", "scope=layer"};
  EXPECT_EQ(join_spec_items(split), (std::vector<std::string>{"lru", "prescope:window=2,predictor=cooccurrence",
                                                              "ondemand", "next-gate:lookahead=2,scope=layer"}));
  EXPECT_EQ(join_spec_items({"a=1"}), (std::vector<std::string>{"a=1"}));  // nothing to join to
}

TEST(Spec, ErrorsNameWhatWasParsed) {
  expect_invalid([] { Spec::parse("", "policy"); }, "policy spec ''");
  expect_invalid([] { Spec::parse("lru:scope", "policy"); }, "is not key=value");
}

TEST(SpecReader, TypedGettersAndCanonicalForm) {
  SpecReader r(Spec::parse("x:b=yes,s=Layer,n=7"), "policy");
  EXPECT_EQ(r.get_int("n", 1), 7);
  EXPECT_TRUE(r.get_bool("b", false));
  EXPECT_EQ(r.get_choice("s", "global", {"global", "layer"}), "layer");
  EXPECT_EQ(r.get_string("path", "none"), "none");
  EXPECT_DOUBLE_EQ(r.get_double("f", 0.25), 0.25);
  r.finish();
  EXPECT_EQ(r.canonical(), "x:n=7,b=1,s=layer,path=none,f=0.25");
}

TEST(SpecReader, UnknownKeysAndBadValuesAreRefused) {
  {
    SpecReader r(Spec::parse("lru:scop=layer"), "policy");
    r.get_choice("scope", "global", {"global", "layer"});
    expect_invalid([&] { r.finish(); }, "policy 'lru': unknown option 'scop' (known: scope)");
  }
  {
    SpecReader r(Spec::parse("lru:scope=row"), "policy");
    expect_invalid([&] { r.get_choice("scope", "global", {"global", "layer"}); },
                   "is not one of global, layer");
  }
  {
    SpecReader r(Spec::parse("x:n=2.5"), "thing");
    expect_invalid([&] { r.get_int("n", 0); }, "thing 'x': option n='2.5' is not an integer");
  }
}

}  // namespace
}  // namespace ferry
