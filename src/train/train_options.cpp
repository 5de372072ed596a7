#include "skiff/train/train_options.h"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/units.h"

namespace skiff::train {
namespace {

using nlohmann::json;

// How one type of value reads and prints. Parse returns InvalidArgument without the option's name
// (the entry adds it); FromJson throws on a value out of range.

template <typename I>
struct IntCodec {
  static constexpr const char* kType = "INT";
  I min = std::numeric_limits<I>::min();
  std::string Text(I v) const { return std::to_string(v); }
  Status Parse(std::string_view text, I* v) const {
    I parsed{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc() || end != text.data() + text.size() || parsed < min) {
      return Status::InvalidArgument("expected an integer >= " + std::to_string(min) + " (got '" +
                                     std::string(text) + "')");
    }
    *v = parsed;
    return Status::Ok();
  }
  json Json(I v) const { return v; }
  I FromJson(const json& j) const {
    if (!j.is_number_integer()) throw std::invalid_argument("not an integer");
    if constexpr (std::is_unsigned_v<I>) {
      if (!j.is_number_unsigned()) throw std::invalid_argument("a negative integer");
      return j.get<I>();
    } else {
      const int64_t v = j.get<int64_t>();
      if (v < min || v > std::numeric_limits<I>::max()) {
        throw std::invalid_argument("an integer out of range");
      }
      return static_cast<I>(v);
    }
  }
};

// A finite number, within a range when one is given: [lo, hi), [lo, inf) or (0, inf) (`positive`);
// `or_value` is one more value accepted outside it (input dropout's -1, "as --dropout").
struct FloatCodec {
  static constexpr const char* kType = "NUMBER";
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();  // excluded when finite
  bool positive = false;                              // excludes lo (0) itself
  bool hi_included = false;                           // includes a finite hi
  std::optional<float> or_value;
  static FloatCodec Between(float lo, float hi) {
    FloatCodec c;
    c.lo = lo;
    c.hi = hi;
    return c;
  }
  static FloatCodec AtLeast(float lo) {
    return Between(lo, std::numeric_limits<float>::infinity());
  }
  static FloatCodec Positive() {
    FloatCodec c = AtLeast(0);
    c.positive = true;
    return c;
  }
  // (0, 1]: a fraction of a whole.
  static FloatCodec Fraction() {
    FloatCodec c = Positive();
    c.hi = 1;
    c.hi_included = true;
    return c;
  }
  std::string Text(float v) const {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip
    return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
  }
  bool InRange(float v) const {
    if (or_value.has_value() && v == *or_value) return true;
    return std::isfinite(v) && (positive ? v > lo : v >= lo) && (hi_included ? v <= hi : v < hi);
  }
  std::string Range() const {
    std::string r;
    if (positive && hi_included) {
      r = "a number in (" + Text(lo) + ", " + Text(hi) + "]";
    } else if (positive) {
      r = "a number > " + Text(lo);
    } else if (std::isinf(lo)) {
      r = "a number";
    } else {
      r = "a number in [" + Text(lo) + ", " + (std::isinf(hi) ? "inf" : Text(hi)) + ")";
    }
    if (or_value.has_value()) r += " or " + Text(*or_value);
    return r;
  }
  Status Parse(std::string_view text, float* v) const {
    float parsed = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc() || end != text.data() + text.size() || !InRange(parsed)) {
      return Status::InvalidArgument("expected " + Range() + " (got '" + std::string(text) + "')");
    }
    *v = parsed;
    return Status::Ok();
  }
  json Json(float v) const { return v; }
  float FromJson(const json& j) const {
    if (!j.is_number()) throw std::invalid_argument("not a number");
    const float v = j.get<float>();
    if (!InRange(v)) throw std::invalid_argument("expected " + Range());
    return v;
  }
};

template <typename E, size_t N>
struct EnumCodec {
  static constexpr const char* kType = "NAME";
  const EnumName<E> (&names)[N];
  std::string Text(E v) const { return NameOf(names, v); }
  Status Parse(std::string_view text, E* v) const {
    SKIFF_ASSIGN_OR_RETURN(*v, ParseName(names, "value", text));
    return Status::Ok();
  }
  json Json(E v) const { return NameOf(names, v); }
  E FromJson(const json& j) const {
    const auto parsed = ParseName(names, "value", j.get<std::string>());
    if (!parsed.ok()) throw std::invalid_argument(parsed.status().message());
    return *parsed;
  }
};

// Fanouts: "15,10" on the command line, [15, 10] in checkpoints; "" is the empty list.
struct FanoutsCodec {
  static constexpr const char* kType = "LIST";
  std::string Text(const std::vector<int>& v) const { return sampler::FanoutsToString(v); }
  Status Parse(std::string_view text, std::vector<int>* v) const {
    SKIFF_ASSIGN_OR_RETURN(*v, sampler::ParseFanouts(std::string(text)));
    return Status::Ok();
  }
  json Json(const std::vector<int>& v) const { return v; }
  std::vector<int> FromJson(const json& j) const { return j.get<std::vector<int>>(); }
};

struct PathCodec {
  static constexpr const char* kType = "PATH";
  std::string Text(const std::string& v) const { return v; }
  Status Parse(std::string_view text, std::string* v) const {
    *v = text;
    return Status::Ok();
  }
  json Json(const std::string& v) const { return v; }
  std::string FromJson(const json& j) const { return j.get<std::string>(); }
};

// A byte size ("8GiB"); 0, printed "", means automatic.
struct BytesCodec {
  static constexpr const char* kType = "SIZE";
  std::string Text(uint64_t v) const { return v == 0 ? "" : std::to_string(v); }
  Status Parse(std::string_view text, uint64_t* v) const {
    if (!ParseBytes(text, v) || *v == 0) {
      return Status::InvalidArgument("expected a size such as 8GiB (got '" + std::string(text) +
                                     "')");
    }
    return Status::Ok();
  }
  json Json(uint64_t v) const { return v; }
  uint64_t FromJson(const json& j) const { return j.get<uint64_t>(); }
};

// One table entry: `field(o)` is the option's member of `o` (a generic lambda, so that it serves
// const and mutable access alike).
template <typename Codec, typename Field>
TrainOption Entry(std::string name, OptionScope scope, std::string help, Field field, Codec codec) {
  TrainOption e;
  e.name = std::move(name);
  e.help = std::move(help);
  e.scope = scope;
  e.text = [=](const TrainOptions& o) { return codec.Text(field(o)); };
  e.type = Codec::kType;
  e.parse_value = [=](std::string_view text, TrainOptions* o) {
    return codec.Parse(text, &field(*o));
  };
  e.to_json = [=](const TrainOptions& o) { return codec.Json(field(o)); };
  e.from_json = [=](const json& j, TrainOptions* o) { field(*o) = codec.FromJson(j); };
  return e;
}

template <typename E, size_t N>
TrainOption EnumEntry(std::string name, OptionScope scope, std::string help,
                      const EnumName<E> (&names)[N], auto field) {
  const EnumCodec<E, N> codec{names};
  return Entry(std::move(name), scope, help + ": " + NamesList(names), field, codec);
}

constexpr auto kRun = OptionScope::kRun;
constexpr auto kSession = OptionScope::kSession;

std::vector<TrainOption> ModelOptions() {
  return {
      EnumEntry(
          "model", kRun, "Model", model::kModelKindNames,
          [](auto& o) -> auto& { return o.model.kind; }),
      Entry(
          "layers", kRun, "Number of GNN layers",
          [](auto& o) -> auto& { return o.model.num_layers; }, IntCodec<int>{1}),
      Entry(
          "hidden", kRun, "Hidden width", [](auto& o) -> auto& { return o.model.hidden_dim; },
          IntCodec<int64_t>{1}),
      Entry(
          "dropout", kRun, "Dropout probability", [](auto& o) -> auto& { return o.model.dropout; },
          FloatCodec::Between(0, 1)),
      Entry(
          "input-dropout", kRun, "Dropout on the input features (-1: same as --dropout)",
          [](auto& o) -> auto& { return o.model.input_dropout; },
          [] {
            FloatCodec c = FloatCodec::Between(0, 1);
            c.or_value = -1.0f;
            return c;
          }()),
      Entry(
          "heads", kRun, "GAT attention heads", [](auto& o) -> auto& { return o.model.heads; },
          IntCodec<int>{1}),
      EnumEntry(
          "activation", kRun, "Activation of hidden layers", model::kActivationNames,
          [](auto& o) -> auto& { return o.model.activation; }),
      EnumEntry(
          "norm", kRun, "Normalisation of hidden layers", model::kNormNames,
          [](auto& o) -> auto& { return o.model.norm; }),
      EnumEntry(
          "feature-norm", kRun, "Feature rows as stored, or scaled to sum 1", kFeatureNormNames,
          [](auto& o) -> auto& { return o.feature_norm; }),
  };
}

std::vector<TrainOption> SamplingOptions() {
  return {
      Entry(
          "fanouts", kRun,
          "Neighbours sampled per layer, input layer first; -1 = all, 0 = none (the node's own "
          "features only)",
          [](auto& o) -> auto& { return o.fanouts; }, FanoutsCodec{}),
      Entry(
          "eval-fanouts", kRun,
          "Fanouts for evaluation (default: all neighbours, capped at " +
              std::to_string(kDefaultEvalFanoutCap) + " per node)",
          [](auto& o) -> auto& { return o.eval_fanouts; }, FanoutsCodec{}),
      Entry(
          "batch-size", kRun, "Seeds (link: positive edges) per training mini-batch",
          [](auto& o) -> auto& { return o.batch_size; }, IntCodec<int64_t>{1}),
      Entry(
          "eval-batch-size", kRun,
          "Seeds per evaluation mini-batch (link: nodes per embedding batch)",
          [](auto& o) -> auto& { return o.eval_batch_size; }, IntCodec<int64_t>{1}),
      Entry(
          "accumulate", kRun,
          "Batches per optimiser step: their gradients are summed in batch order and averaged "
          "(with --distributed, this many batches from every rank)",
          [](auto& o) -> auto& { return o.accumulate; }, IntCodec<int>{1}),
      EnumEntry(
          "ownership", kRun,
          "--distributed: each rank holds the whole dataset, or a range of its partitions and "
          "fetches other ranks' rows (docs/distributed.md)",
          kOwnershipNames, [](auto& o) -> auto& { return o.ownership; }),
      Entry(
          "micro-batches", kSession,
          "Compute each training batch in this many parts, summing their gradients (fewer "
          "activations in memory; dropout masks drawn per part); 0 = as the --memory plan needs",
          [](auto& o) -> auto& { return o.micro_batches; }, IntCodec<int>{0}),
      Entry(
          "epochs", OptionScope::kExtendable, "Epochs", [](auto& o) -> auto& { return o.epochs; },
          IntCodec<int>{0}),
      Entry(
          "epoch-fraction", kRun,
          "Train each epoch on this fraction of the training nodes, a fresh random subset each "
          "epoch; every training node once per ceil(1/F) epochs (node classification)",
          [](auto& o) -> auto& { return o.epoch_fraction; }, FloatCodec::Fraction()),
      Entry(
          "seed", kRun, "Seed of every random stream", [](auto& o) -> auto& { return o.seed; },
          IntCodec<uint64_t>{0}),
  };
}

std::vector<TrainOption> OptimizerOptions() {
  return {
      EnumEntry(
          "optimizer", kRun, "Optimiser", model::kOptimizerKindNames,
          [](auto& o) -> auto& { return o.optimizer.kind; }),
      Entry(
          "lr", kRun, "Learning rate", [](auto& o) -> auto& { return o.optimizer.lr; },
          FloatCodec::Positive()),
      Entry(
          "weight-decay", kRun, "L2 weight decay",
          [](auto& o) -> auto& { return o.optimizer.weight_decay; }, FloatCodec::AtLeast(0)),
      EnumEntry(
          "weight-decay-scope", kRun, "Parameters weight decay applies to", model::kDecayScopeNames,
          [](auto& o) -> auto& { return o.optimizer.decay_scope; }),
      Entry(
          "momentum", kRun, "SGD momentum", [](auto& o) -> auto& { return o.optimizer.momentum; },
          FloatCodec::Between(0, 1)),
  };
}

std::vector<TrainOption> SessionOptions() {
  return {
      EnumEntry(
          "cuda-matmul", kSession, "cuda: matrix products on TF32 tensor cores, or in exact fp32",
          model::kCudaMatmulNames, [](auto& o) -> auto& { return o.model.cuda_matmul; }),
      Entry(
          "device-memory", kSession,
          "cuda: keep the features in device memory when they fit in this, else cache the "
          "feature rows batches reuse in it (e.g. 8GiB; default: the device's free memory less "
          "1/8 of it, at least 2 GiB)",
          [](auto& o) -> auto& { return o.device_memory_bytes; }, BytesCodec{}),
      EnumEntry(
          "sampler", kSession,
          "Where batches are sampled: host threads, or (cuda, features in device memory) the "
          "device, from the graph kept in device memory beside them; auto: the device when it "
          "fits, "
          "else the host",
          kSamplerPlaceNames, [](auto& o) -> auto& { return o.sampler; }),
      Entry(
          "checkpoint", kSession, "Write the best model (by valid accuracy) here",
          [](auto& o) -> auto& { return o.checkpoint_path; }, PathCodec{}),
      Entry(
          "metrics", kSession, "Write per-epoch metrics as JSON lines",
          [](auto& o) -> auto& { return o.metrics_path; }, PathCodec{}),
  };
}

std::vector<TrainOption> LinkTaskOptions() {
  return {
      EnumEntry(
          "task", kRun, "What to learn: node classification or link prediction", kTaskNames,
          [](auto& o) -> auto& { return o.task; }),
      Entry(
          "out-dim", kRun, "link: width of the encoder's output (the node representation)",
          [](auto& o) -> auto& { return o.link.out_dim; }, IntCodec<int64_t>{1}),
      EnumEntry(
          "decoder", kRun, "link: how a pair of node representations is scored",
          model::kDecoderKindNames, [](auto& o) -> auto& { return o.link.decoder; }),
      EnumEntry(
          "link-loss", kRun,
          "link: binary cross-entropy over positives and negatives, softmax of each positive "
          "against the negatives, or gae: weighted binary cross-entropy over every pair of a "
          "batch's nodes, self-pairs positive (Kipf & Welling; for small graphs, dot/distmult)",
          model::kLinkLossNames, [](auto& o) -> auto& { return o.link.loss; }),
      Entry(
          "negatives", kRun, "link: negative destinations shared by a training batch's edges",
          [](auto& o) -> auto& { return o.link.negatives; }, IntCodec<int>{1}),
      EnumEntry(
          "negative-sampler", kRun, "link: how negatives are drawn", kNegativeSamplerNames,
          [](auto& o) -> auto& { return o.link.negative_sampler; }),
      Entry(
          "eval-negatives", kRun,
          "link: candidates each held-out edge is ranked against (MRR, Hits@K; 0: none)",
          [](auto& o) -> auto& { return o.link.eval_negatives; }, IntCodec<int>{0}),
      EnumEntry(
          "eval-candidates", kRun,
          "link: rank each held-out edge among the dataset's own candidates when it has them "
          "(an OGB split's target_node_neg), or among --eval-negatives drawn uniformly",
          kEvalCandidatesNames, [](auto& o) -> auto& { return o.link.eval_candidates; }),
      EnumEntry(
          "ranking", kRun, "link: rank against every candidate, or without known edges",
          kRankingNames, [](auto& o) -> auto& { return o.link.ranking; }),
      Entry(
          "eval-edges", kRun, "link: held-out edges ranked per split (0: all)",
          [](auto& o) -> auto& { return o.link.eval_edges; }, IntCodec<int64_t>{0}),
  };
}

std::vector<TrainOption> BuildTable() {
  std::vector<TrainOption> table;
  for (auto part : {LinkTaskOptions(), ModelOptions(), SamplingOptions(), OptimizerOptions(),
                    SessionOptions()}) {
    for (TrainOption& e : part) table.push_back(std::move(e));
  }
  return table;
}

}  // namespace

std::string TrainOption::json_key() const {
  std::string key = name;
  for (char& c : key) c = c == '-' ? '_' : c;
  return key;
}

const std::vector<TrainOption>& TrainOptionTable() {
  static const std::vector<TrainOption> table = BuildTable();
  return table;
}

const TrainOption* FindTrainOption(std::string_view name) {
  for (const TrainOption& e : TrainOptionTable()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

int TrainOptions::LargestFanout() const {
  int largest = eval_fanouts.empty() && !fanouts.empty() ? kDefaultEvalFanoutCap : -1;
  for (const std::vector<int>* list : {&fanouts, &eval_fanouts}) {
    for (const int f : *list) largest = std::max(largest, f);
  }
  return largest;
}

std::string TrainOptions::ToJson() const {
  json j;
  j["in_dim"] = model.in_dim;
  j["num_classes"] = model.num_classes;
  j["world_size"] = world_size;
  for (const TrainOption& e : TrainOptionTable()) {
    if (e.saved()) j[e.json_key()] = e.to_json(*this);
  }
  return j.dump();
}

Result<TrainOptions> TrainOptions::FromJson(const std::string& text) {
  TrainOptions o;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Status::Corruption("checkpoint configuration: not a JSON object");
  std::string key;
  try {
    key = "in_dim";
    o.model.in_dim = j.at(key).get<int64_t>();
    key = "num_classes";
    o.model.num_classes = j.at(key).get<int64_t>();
    key = "world_size";
    o.world_size = j.contains(key) ? j[key].get<int>() : 1;
    if (o.world_size < 1) throw std::invalid_argument("not a number of ranks");
    for (const TrainOption& e : TrainOptionTable()) {
      key = e.json_key();
      if (e.saved() && j.contains(key)) e.from_json(j[key], &o);
    }
  } catch (const std::exception& e) {
    return Status::Corruption("checkpoint configuration, key \"" + key + "\": " + e.what());
  }
  o.model.seed = o.seed;
  return o;
}

}  // namespace skiff::train
