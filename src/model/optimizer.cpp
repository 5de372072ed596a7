#include "kernels/cpu/optimizer.h"

#include <cmath>

#include "skiff/model/model.h"

namespace skiff::model {

Status Optimizer::ValidateConfig(const Config& config) {
  if (!(config.lr > 0.0f) || !std::isfinite(config.lr)) {
    return Status::InvalidArgument("learning rate must be positive and finite (got " +
                                   std::to_string(config.lr) + ")");
  }
  if (!(config.weight_decay >= 0.0f) || !std::isfinite(config.weight_decay)) {
    return Status::InvalidArgument("weight decay must be non-negative and finite (got " +
                                   std::to_string(config.weight_decay) + ")");
  }
  // Momentum at or above 1 never forgets a gradient: the update grows without bound.
  if (!(config.momentum >= 0.0f && config.momentum < 1.0f)) {
    return Status::InvalidArgument("momentum must lie in [0, 1) (got " +
                                   std::to_string(config.momentum) + ")");
  }
  return Status::Ok();
}

Optimizer::Optimizer(Model& model, Config config) : model_(model), config_(std::move(config)) {
  SKIFF_CHECK_MSG(ValidateConfig(config_).ok(), "invalid optimizer config");
  const int per_parameter = OptimizerStateSlots(config_);
  for (const Parameter& p : model_.Parameters()) {
    for (int slot = 0; slot < per_parameter; ++slot) {
      state_.emplace_back(static_cast<size_t>(p.size()), 0.0f);
    }
  }
}

Status Optimizer::Step() {
  ++step_;
  return model_.ApplyUpdate(config_, step_, state_);
}

Result<std::vector<std::vector<float>>*> Optimizer::state() {
  SKIFF_RETURN_IF_ERROR(model_.ReadOptimizerState(state_));
  return &state_;
}

int OptimizerStateSlots(const OptimizerConfig& config) {
  return config.kind == OptimizerKind::kAdam ? 2 : 1;
}

float WeightDecayOf(const OptimizerConfig& config, const Parameter& param) {
  const bool decayed = config.decay_scope == DecayScope::kAll || param.name.starts_with("layer0.");
  return decayed ? config.weight_decay : 0.0f;
}

void UpdateOnHost(const OptimizerConfig& config, int64_t step, const std::vector<Parameter>& params,
                  std::vector<std::vector<float>>& state) {
  const bool adam = config.kind == OptimizerKind::kAdam;
  SKIFF_CHECK(state.size() == params.size() * static_cast<size_t>(OptimizerStateSlots(config)));
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    const float weight_decay = WeightDecayOf(config, p);
    if (adam) {
      cpu::AdamConfig adam_config;
      adam_config.lr = config.lr;
      adam_config.weight_decay = weight_decay;
      SKIFF_CHECK(static_cast<int64_t>(state[2 * i].size()) == p.size());
      cpu::AdamStep(p.size(), adam_config, step, p.grad, p.data, state[2 * i].data(),
                    state[2 * i + 1].data());
    } else {
      SKIFF_CHECK(static_cast<int64_t>(state[i].size()) == p.size());
      cpu::SgdStep(p.size(), config.lr, config.momentum, weight_decay, p.grad, p.data,
                   state[i].data());
    }
  }
}

}  // namespace skiff::model
