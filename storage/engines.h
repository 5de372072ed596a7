// Internal to storage/: constructors of the concrete engines (CreateIoEngine picks among them).
#pragma once

#include <memory>

#include "skiff/storage/io_engine.h"
#include "storage/request_tracker.h"

namespace skiff::storage::internal {

// Unavailable (with the errno text) when the ring cannot be set up.
Result<std::unique_ptr<IoEngine>> CreateIoUringEngine(const IoEngineOptions& options);
std::unique_ptr<IoEngine> CreatePreadEngine(const IoEngineOptions& options);

}  // namespace skiff::storage::internal
