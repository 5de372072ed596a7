// The table of training options: every entry reads what it prints, names itself in its errors,
// and is saved in (and read back from) checkpoints exactly when it defines the run.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "skiff/train/train_options.h"

using namespace skiff;
using namespace skiff::train;

TEST_CASE("train options: names and checkpoint keys are unique, and every default reads back") {
  const TrainOptions defaults;
  std::set<std::string> names, keys;
  for (const TrainOption& e : TrainOptionTable()) {
    CAPTURE(e.name);
    CHECK(names.insert(e.name).second);
    CHECK(keys.insert(e.json_key()).second);
    CHECK(e.json_key() != "in_dim");
    CHECK(e.json_key() != "num_classes");
    CHECK(!e.help.empty());
    CHECK(FindTrainOption(e.name) == &e);
    // What --help shows as the default is what the option reads back.
    const std::string text = e.text(defaults);
    if (text.empty()) continue;  // an unset path or an automatic size
    TrainOptions parsed;
    REQUIRE(e.Parse(text, &parsed).ok());
    CHECK(e.text(parsed) == text);
  }
  CHECK(FindTrainOption("no-such-option") == nullptr);
}

TEST_CASE(
    "train options: a value is parsed into its field, bad text is refused naming the option") {
  TrainOptions o;
  REQUIRE(FindTrainOption("fanouts")->Parse("5,-1,0", &o).ok());
  CHECK(o.fanouts == std::vector<int>{5, -1, 0});
  REQUIRE(FindTrainOption("activation")->Parse("elu", &o).ok());
  CHECK(o.model.activation == model::Activation::kElu);
  REQUIRE(FindTrainOption("weight-decay-scope")->Parse("first-layer", &o).ok());
  CHECK(o.optimizer.decay_scope == model::DecayScope::kFirstLayer);
  REQUIRE(FindTrainOption("lr")->Parse("0.003", &o).ok());
  CHECK(o.optimizer.lr == 0.003f);
  REQUIRE(FindTrainOption("device-memory")->Parse("2GiB", &o).ok());
  CHECK(o.device_memory_bytes == (uint64_t{2} << 30));
  REQUIRE(FindTrainOption("checkpoint")->Parse("out/best.ckpt", &o).ok());
  CHECK(o.checkpoint_path == "out/best.ckpt");

  struct Bad {
    const char* name;
    const char* text;
    const char* says;
  };
  for (const Bad& bad :
       {Bad{"layers", "0", "--layers: expected an integer >= 1"},
        Bad{"layers", "2x", "--layers: expected an integer"},
        Bad{"seed", "-1", "--seed: expected an integer >= 0"},
        Bad{"epochs", "", "--epochs: expected an integer"},
        Bad{"lr", "fast", "--lr: expected a number"},
        Bad{"dropout", "nan", "--dropout: expected a number"},
        Bad{"dropout", "1.5", "--dropout: expected a number in [0, 1) (got '1.5')"},
        Bad{"input-dropout", "-0.5", "--input-dropout: expected a number in [0, 1) or -1"},
        Bad{"lr", "-0.01", "--lr: expected a number > 0 (got '-0.01')"},
        Bad{"lr", "0", "--lr: expected a number > 0"},
        Bad{"weight-decay", "-1", "--weight-decay: expected a number in [0, inf) (got '-1')"},
        Bad{"momentum", "1.0", "--momentum: expected a number in [0, 1) (got '1.0')"},
        Bad{"activation", "tanh",
            "--activation: unknown value 'tanh' (expected "
            "relu or elu)"},
        Bad{"model", "mlp", "(expected sage, gcn or gat)"}, Bad{"fanouts", "15,x", "--fanouts"},
        Bad{"device-memory", "0", "--device-memory: expected a size"}}) {
    CAPTURE(bad.name);
    CAPTURE(bad.text);
    TrainOptions untouched;
    const Status st = FindTrainOption(bad.name)->Parse(bad.text, &untouched);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find(bad.says) != std::string::npos);
  }
}

TEST_CASE("train options: checkpoints hold the run's options and not the session's") {
  TrainOptions o;
  o.model.in_dim = 12;
  o.model.num_classes = 3;
  o.checkpoint_path = "best.ckpt";
  o.device_memory_bytes = 1 << 20;
  const nlohmann::json j = nlohmann::json::parse(o.ToJson());
  for (const TrainOption& e : TrainOptionTable()) {
    CAPTURE(e.name);
    CHECK(j.contains(e.json_key()) == e.saved());
  }
  CHECK(j.at("in_dim") == 12);
  CHECK(j.at("batch_size") == 1024);
  CHECK(j.at("fanouts") == nlohmann::json::array({15, 10}));
  CHECK(j.at("activation") == "relu");
  auto back = TrainOptions::FromJson(o.ToJson());
  REQUIRE(back.ok());
  CHECK(back->checkpoint_path.empty());
  CHECK(back->device_memory_bytes == 0);
}

TEST_CASE("train options: a damaged checkpoint configuration is Corruption naming the key") {
  const std::string good = TrainOptions().ToJson();
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json j = nlohmann::json::parse(good);
    j[key] = std::move(value);
    return j.dump();
  };
  struct Case {
    std::string text;
    const char* says;
  };
  for (const Case& c :
       {Case{"[1, 2]", "not a JSON object"}, Case{"{", "not a JSON object"},
        Case{with("layers", "two"), "key \"layers\""}, Case{with("layers", 0), "key \"layers\""},
        Case{with("lr", "0.1"), "key \"lr\""}, Case{with("norm", "batch"), "key \"norm\""},
        Case{with("fanouts", 15), "key \"fanouts\""}, Case{with("seed", -3), "key \"seed\""}}) {
    CAPTURE(c.text);
    auto parsed = TrainOptions::FromJson(c.text);
    REQUIRE(!parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kCorruption);
    CHECK(parsed.status().message().find(c.says) != std::string::npos);
  }
  // in_dim and num_classes come from the data the model was built for: they must be there.
  nlohmann::json j = nlohmann::json::parse(good);
  j.erase("in_dim");
  CHECK(TrainOptions::FromJson(j.dump()).status().message().find("in_dim") != std::string::npos);
}

TEST_CASE("train options: checkpoints record the job's ranks; older ones read as one rank") {
  TrainOptions o;
  o.world_size = 4;
  o.accumulate = 1;
  auto back = TrainOptions::FromJson(o.ToJson());
  REQUIRE(back.ok());
  CHECK(back->world_size == 4);
  nlohmann::json j = nlohmann::json::parse(o.ToJson());
  j.erase("world_size");
  j.erase("accumulate");  // written before either existed
  back = TrainOptions::FromJson(j.dump());
  REQUIRE(back.ok());
  CHECK(back->world_size == 1);
  CHECK(back->accumulate == 1);
  j["world_size"] = 0;
  const auto bad = TrainOptions::FromJson(j.dump());
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("world_size") != std::string::npos);
}
