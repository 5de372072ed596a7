// The one-process communicator: rank 0 of 1, every collective a no-op.
#include <cstdio>
#include <cstdlib>

#include "skiff/dist/communicator.h"

namespace skiff::dist {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  // The sum over one rank is its own values.
  Status AllReduceSum(std::span<float>, std::string_view) override { return Status::Ok(); }
  Status AllReduceSum(std::span<double>, std::string_view) override { return Status::Ok(); }
  Status AllReduceSum(std::span<int64_t>, std::string_view) override { return Status::Ok(); }
  Status Broadcast(std::string*, int root, std::string_view) override {
    SKIFF_CHECK(root == 0);
    return Status::Ok();
  }
  Result<std::vector<std::string>> AllGather(std::string_view bytes, std::string_view) override {
    return std::vector<std::string>{std::string(bytes)};
  }
  Status Barrier(std::string_view) override { return Status::Ok(); }
  Result<std::vector<std::string>> AllToAll(std::vector<std::string> to_each,
                                            std::string_view) override {
    SKIFF_CHECK(to_each.size() == 1);
    return to_each;
  }
  [[noreturn]] void Abort(const Status& why) override {
    std::fprintf(stderr, "skiff: %s\n", why.ToString().c_str());
    std::exit(1);
  }
};

}  // namespace

std::unique_ptr<Communicator> CreateLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace skiff::dist
