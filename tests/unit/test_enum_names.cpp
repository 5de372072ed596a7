// EnumName tables: NameOf, NamesList and ParseName, and the tables of the enums that use them.
#include <doctest/doctest.h>

#include "skiff/enum_names.h"
#include "skiff/model/model.h"
#include "skiff/partition/partitioner.h"
#include "skiff/pipeline/buffered_graph.h"

using namespace skiff;

namespace {
enum class Color { kRed, kGreen, kBlue, kGrey };
constexpr EnumName<Color> kColors[] = {{Color::kRed, "red"},
                                       {Color::kGreen, "green"},
                                       {Color::kBlue, "blue"},
                                       {Color::kGreen, "verde"}};
}  // namespace

TEST_CASE("enum names: one table gives the name, the parse and the message") {
  CHECK(std::string(NameOf(kColors, Color::kGreen)) == "green");  // the first entry's name
  CHECK(std::string(NameOf(kColors, Color::kGrey)) == "?");       // not in the table
  CHECK(ParseName(kColors, "colour", "blue").value() == Color::kBlue);
  CHECK(ParseName(kColors, "colour", "verde", 3).value() == Color::kGreen);  // an alias
  const auto bad = ParseName(kColors, "colour", "mauve", 3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "unknown colour 'mauve' (expected red, green or blue)");
  const auto all = ParseName(kColors, "colour", "");
  REQUIRE_FALSE(all.ok());
  CHECK(all.status().message() == "unknown colour '' (expected red, green, blue or verde)");
  CHECK(NamesList(kColors, 3) == "red, green or blue");  // what --help lists
  CHECK(NamesList(kColors, 1) == "red");
}

TEST_CASE("enum names: every value of the option enums round-trips through its name") {
  for (model::ModelKind k :
       {model::ModelKind::kSage, model::ModelKind::kGcn, model::ModelKind::kGat}) {
    CHECK(model::ParseModelKind(model::ModelKindName(k)).value() == k);
  }
  for (partition::Algorithm a : {partition::Algorithm::kGrem, partition::Algorithm::kFennel,
                                 partition::Algorithm::kLdg, partition::Algorithm::kRandom}) {
    CHECK(partition::ParseAlgorithm(partition::AlgorithmName(a)).value() == a);
  }
  CHECK(partition::ParseAlgorithm("hash").value() == partition::Algorithm::kRandom);
  for (pipeline::SamplingMode m :
       {pipeline::SamplingMode::kExact, pipeline::SamplingMode::kInBuffer}) {
    CHECK(pipeline::ParseSamplingMode(pipeline::SamplingModeName(m)).value() == m);
  }
  const auto bad = pipeline::ParseSamplingMode("approximate");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "unknown sampling mode 'approximate' (expected exact or in-buffer)");
}
