// The extension's parts, each adding its classes and functions to the module.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "skiff/pipeline/memory_budget.h"

namespace skiff::python {

void BindDataset(nanobind::module_& m);     // Dataset: open, counts, splits, labels, rows, raw IDs
void BindLoader(nanobind::module_& m);      // Loader, Pass, Batch (the out-of-core batch stream)
void BindLinkLoader(nanobind::module_& m);  // LinkLoader (its passes are Pass objects)

// How a loader's budget is split: (what, bytes) pairs, the buffer pool last.
std::vector<std::pair<std::string, uint64_t>> MemoryPlanItems(const pipeline::MemoryPlan& plan);

}  // namespace skiff::python
