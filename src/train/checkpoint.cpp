#include "skiff/train/checkpoint.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "skiff/io/atomic_file.h"
#include "skiff/io/path_status.h"

namespace skiff::train {
namespace {

constexpr char kMagic[8] = {'S', 'K', 'I', 'F', 'F', 'C', 'K', 'P'};
constexpr size_t kHeaderBytes = 32;

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    buf_ += s;
  }
  void PutFloats(const std::vector<float>& v) {
    Put<uint64_t>(v.size());
    buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  std::string& buf() { return buf_; }

 private:
  std::string buf_;
};

class Reader {
 public:
  Reader(const std::string& path, std::string_view data) : path_(path), data_(data) {}
  template <typename T>
  Status Get(T* v, const char* what) {
    if (pos_ + sizeof(T) > data_.size()) return Truncated(what);
    std::memcpy(v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status GetString(std::string* s, const char* what) {
    uint64_t n = 0;
    SKIFF_RETURN_IF_ERROR(Get(&n, what));
    if (n > data_.size() - pos_) return Truncated(what);
    s->assign(data_.data() + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  Status GetFloats(std::vector<float>* v, const char* what) {
    uint64_t n = 0;
    SKIFF_RETURN_IF_ERROR(Get(&n, what));
    if (n > (data_.size() - pos_) / sizeof(float)) return Truncated(what);
    v->resize(n);
    std::memcpy(v->data(), data_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    return Status::Ok();
  }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  Status Truncated(const char* what) const {
    return Status::Corruption(path_ + ": checkpoint payload ends inside " + what + " (offset " +
                              std::to_string(kHeaderBytes + pos_) + ")");
  }
  const std::string& path_;
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

std::string LastCheckpointPath(const std::string& best_path) { return best_path + ".last"; }

Status WriteEpochCheckpoints(const std::string& best_path, const Checkpoint& checkpoint,
                             bool improved) {
  if (improved) SKIFF_RETURN_IF_ERROR(WriteCheckpoint(best_path, checkpoint));
  return WriteCheckpoint(LastCheckpointPath(best_path), checkpoint);
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& c) {
  Writer w;
  w.PutString(c.config_json);
  w.Put<int64_t>(c.epoch);
  w.Put<uint64_t>(c.seed);
  w.Put<int64_t>(c.best_epoch);
  w.Put<double>(c.best_valid_acc);
  w.Put<double>(c.best_valid_loss);
  w.Put<double>(c.best_test_acc);
  w.Put<uint64_t>(c.parameters.size());
  for (const auto& t : c.parameters) {
    w.PutString(t.name);
    w.Put<uint64_t>(t.shape.size());
    for (int64_t d : t.shape) w.Put<int64_t>(d);
    w.PutFloats(t.values);
  }
  w.Put<int64_t>(c.optimizer_steps);
  w.Put<uint64_t>(c.optimizer_state.size());
  for (const auto& s : c.optimizer_state) w.PutFloats(s);
  w.PutString(c.best_metrics_json);
  const std::string& payload = w.buf();
  Writer h;
  h.buf().append(kMagic, sizeof(kMagic));
  h.Put<uint32_t>(kCheckpointVersion);
  h.Put<uint32_t>(0);
  h.Put<uint64_t>(payload.size());
  h.Put<uint64_t>(XXH64(payload.data(), payload.size(), 0));
  return io::WriteFileAtomic(path, {h.buf(), payload}).WithContext("writing checkpoint");
}

namespace {

// The payload of checkpoint file `path` (contents `data`) once its header and checksum check out,
// and the file's version in *version.
Result<std::string_view> CheckedPayload(const std::string& path, const std::string& data,
                                        uint32_t* version) {
  if (data.size() < kHeaderBytes || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption(path + ": not a Skiff checkpoint (bad magic or shorter than the " +
                              std::to_string(kHeaderBytes) + "-byte header)");
  }
  uint64_t payload_bytes = 0, checksum = 0;
  std::memcpy(version, data.data() + 8, 4);
  std::memcpy(&payload_bytes, data.data() + 16, 8);
  std::memcpy(&checksum, data.data() + 24, 8);
  if (*version < kOldestCheckpointVersion || *version > kCheckpointVersion) {
    return Status::Corruption(path + ": checkpoint version " + std::to_string(*version) +
                              ", expected " + std::to_string(kOldestCheckpointVersion) + " to " +
                              std::to_string(kCheckpointVersion));
  }
  if (payload_bytes != data.size() - kHeaderBytes) {
    return Status::Corruption(path + ": header says " + std::to_string(payload_bytes) +
                              " payload bytes, file has " +
                              std::to_string(data.size() - kHeaderBytes) + " (truncated?)");
  }
  const std::string_view payload(data.data() + kHeaderBytes, payload_bytes);
  if (XXH64(payload.data(), payload.size(), 0) != checksum) {
    return Status::Corruption(path + ": checkpoint checksum mismatch (the file is damaged)");
  }
  return payload;
}

Status ReadTensor(const std::string& path, Reader& r, CheckpointTensor* t) {
  SKIFF_RETURN_IF_ERROR(r.GetString(&t->name, "parameter name"));
  uint64_t rank = 0;
  SKIFF_RETURN_IF_ERROR(r.Get(&rank, "parameter rank"));
  if (rank > 8) {
    return Status::Corruption(path + ": parameter " + t->name + " has rank " +
                              std::to_string(rank));
  }
  t->shape.resize(rank);
  for (auto& d : t->shape) SKIFF_RETURN_IF_ERROR(r.Get(&d, "parameter shape"));
  return r.GetFloats(&t->values, "parameter values");
}

}  // namespace

Result<Checkpoint> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int open_errno = errno;
    SKIFF_RETURN_IF_ERROR(io::StatPath("checkpoint", path));  // missing, or the OS's reason
    return Status::FromErrno(open_errno, "open checkpoint " + path);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  uint32_t version = 0;
  SKIFF_ASSIGN_OR_RETURN(const std::string_view payload, CheckedPayload(path, data, &version));
  Reader r(path, payload);
  Checkpoint c;
  SKIFF_RETURN_IF_ERROR(r.GetString(&c.config_json, "config"));
  SKIFF_RETURN_IF_ERROR(r.Get(&c.epoch, "epoch"));
  SKIFF_RETURN_IF_ERROR(r.Get(&c.seed, "seed"));
  SKIFF_RETURN_IF_ERROR(r.Get(&c.best_epoch, "best epoch"));
  SKIFF_RETURN_IF_ERROR(r.Get(&c.best_valid_acc, "best valid accuracy"));
  SKIFF_RETURN_IF_ERROR(r.Get(&c.best_valid_loss, "best valid loss"));
  SKIFF_RETURN_IF_ERROR(r.Get(&c.best_test_acc, "best test accuracy"));
  uint64_t count = 0;
  SKIFF_RETURN_IF_ERROR(r.Get(&count, "parameter count"));
  for (uint64_t i = 0; i < count; ++i) {
    CheckpointTensor t;
    SKIFF_RETURN_IF_ERROR(ReadTensor(path, r, &t));
    c.parameters.push_back(std::move(t));
  }
  SKIFF_RETURN_IF_ERROR(r.Get(&c.optimizer_steps, "optimizer steps"));
  SKIFF_RETURN_IF_ERROR(r.Get(&count, "optimizer state count"));
  for (uint64_t i = 0; i < count; ++i) {
    std::vector<float> s;
    SKIFF_RETURN_IF_ERROR(r.GetFloats(&s, "optimizer state"));
    c.optimizer_state.push_back(std::move(s));
  }
  if (version >= 3) SKIFF_RETURN_IF_ERROR(r.GetString(&c.best_metrics_json, "best metrics"));
  if (!r.at_end()) {
    return Status::Corruption(path + ": trailing bytes after the checkpoint payload");
  }
  return c;
}

void AppendParameters(const std::vector<model::Parameter>& params, Checkpoint* checkpoint) {
  for (const auto& p : params) {
    checkpoint->parameters.push_back(
        {p.name, p.shape, std::vector<float>(p.data, p.data + p.size())});
  }
}

Status MatchParameters(const std::vector<model::Parameter>& params,
                       std::span<const CheckpointTensor> saved) {
  if (params.size() != saved.size()) {
    return Status::InvalidArgument("checkpoint has " + std::to_string(saved.size()) +
                                   " parameters, the model " + std::to_string(params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& t = saved[i];
    if (t.name != params[i].name || t.shape != params[i].shape ||
        static_cast<int64_t>(t.values.size()) != params[i].size()) {
      return Status::InvalidArgument("checkpoint parameter " + t.name +
                                     " does not match the model's " + params[i].name);
    }
  }
  return Status::Ok();
}

void CopyParameters(std::span<const CheckpointTensor> saved,
                    const std::vector<model::Parameter>& params) {
  SKIFF_CHECK(saved.size() == params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    SKIFF_CHECK(static_cast<int64_t>(saved[i].values.size()) == params[i].size());
    std::copy(saved[i].values.begin(), saved[i].values.end(), params[i].data);
  }
}

Status MatchState(const std::vector<std::vector<float>>& state,
                  std::span<const std::vector<float>> saved) {
  bool same = state.size() == saved.size();
  for (size_t i = 0; same && i < state.size(); ++i) same = state[i].size() == saved[i].size();
  if (!same)
    return Status::InvalidArgument("checkpoint optimiser state does not match the optimiser");
  return Status::Ok();
}

}  // namespace skiff::train
