// A build without MPI (CMake found none): the MPI communicator is not there.
#include "skiff/dist/communicator.h"

namespace skiff::dist {

bool HaveMpi() { return false; }

Result<std::unique_ptr<Communicator>> CreateMpiCommunicator(const CommOptions&) {
  return Status::Unavailable(
      "this build of skiff has no MPI (CMake found none when it was configured): install Open MPI "
      "(Debian: openmpi-bin libopenmpi-dev) and rebuild to train with --distributed");
}

}  // namespace skiff::dist
