// The one-process communicator: rank 0 of 1, and every collective leaves the single rank's data
// as the result (the sum over one rank is its own values).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/dist/communicator.h"

namespace skiff::dist {
namespace {

TEST_CASE("the local communicator is rank 0 of 1") {
  std::unique_ptr<Communicator> comm = CreateLocalCommunicator();
  CHECK(comm->rank() == 0);
  CHECK(comm->size() == 1);
}

TEST_CASE("the local communicator's all-reduce leaves the values as they are") {
  std::unique_ptr<Communicator> comm = CreateLocalCommunicator();
  std::vector<float> f = {1.5f, -0.0f, 3e-8f};
  REQUIRE(comm->AllReduceSum(f, "floats").ok());
  CHECK(f == std::vector<float>{1.5f, -0.0f, 3e-8f});
  std::vector<double> d = {2.25, 1e300};
  REQUIRE(comm->AllReduceSum(d, "doubles").ok());
  CHECK(d == std::vector<double>{2.25, 1e300});
  std::vector<int64_t> n = {7, -1, INT64_MAX};
  REQUIRE(comm->AllReduceSum(n, "counts").ok());
  CHECK(n == std::vector<int64_t>{7, -1, INT64_MAX});
  std::vector<float> empty;
  CHECK(comm->AllReduceSum(empty, "nothing").ok());
}

TEST_CASE("the local communicator's broadcast, all-gather and barrier") {
  std::unique_ptr<Communicator> comm = CreateLocalCommunicator();
  std::string bytes("options\0with a zero", 19);
  REQUIRE(comm->Broadcast(&bytes, 0, "options").ok());
  CHECK(bytes == std::string("options\0with a zero", 19));
  Result<std::vector<std::string>> all = comm->AllGather(bytes, "fingerprints");
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK((*all)[0] == bytes);
  CHECK(comm->Barrier("start").ok());
}

TEST_CASE("the MPI communicator refuses a timeout that is not positive, or says MPI is absent") {
  Result<std::unique_ptr<Communicator>> comm = CreateMpiCommunicator({.timeout_seconds = 0});
  REQUIRE(!comm.ok());
  if (HaveMpi()) {
    CHECK(comm.status().code() == StatusCode::kInvalidArgument);
    CHECK(comm.status().message().find("--dist-timeout") != std::string::npos);
  } else {
    CHECK(comm.status().code() == StatusCode::kUnavailable);
    CHECK(comm.status().message().find("no MPI") != std::string::npos);
  }
}

}  // namespace
}  // namespace skiff::dist
