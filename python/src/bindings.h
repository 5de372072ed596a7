// The extension's parts, each adding its classes and functions to the module.
#pragma once

#include <nanobind/nanobind.h>

namespace skiff::python {

void BindDataset(nanobind::module_& m);  // Dataset: open, counts, splits, labels, rows, raw IDs
void BindLoader(nanobind::module_& m);   // Loader, Pass, Batch (the out-of-core batch stream)

}  // namespace skiff::python
