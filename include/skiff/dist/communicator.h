// Communicator: how the processes of one data-parallel job talk -- a fixed set of `size()` ranks,
// numbered 0..size()-1, started together (by mpirun) and failing together (fail-stop).
//
// Three implementations: a one-process communicator (rank 0 of 1; every collective is a no-op that
// leaves its data as the single rank's contribution), always built; ranks as threads of one
// process (CreateThreadCommunicators: multi-rank unit tests without MPI), always built; and an
// Open MPI one, built when CMake finds MPI (HaveMpi()). Training code is written against this
// interface only, so every distributed path runs, and is tested, in one process.
//
// Collectives. Every rank calls the same collectives in the same order with the same sizes (a
// programmer error otherwise; the MPI communicator reports a size mismatch it sees as
// InvalidArgument). Each returns OK when every rank took part, and an error otherwise:
//   - Aborted when the collective did not complete within the deadline
//     (CommOptions::timeout_seconds): a rank died, stopped or took another path. The message names
//     the operation, its sequence number and, as far as this rank can tell, the ranks it heard
//     nothing from or that did not receive its part ("allreduce #12 (gradients) did not complete
//     within 60 s (--dist-timeout): no message from rank 1 ...");
//   - Internal for an error MPI returned (the communicator uses MPI_ERRORS_RETURN), with MPI's
//     error string.
// MPI offers no timeouts, so the MPI communicator runs each collective as nonblocking point-to-
// point messages and polls them (MPI_Test) against the deadline: a silent peer becomes an error,
// never a hang. After an error the communicator is unusable (later collectives return the same
// error): the caller reports the Status and calls Abort(), which ends every process of the job.
//
// AllReduceSum of floating-point values is ordered: every rank receives every rank's vector and
// adds them in rank order, starting from rank 0's (out = v0; out += v1; ...; out += v_{W-1}).
// The result is bitwise the same on every rank, and the same as a one-process loop that adds the
// ranks' contributions in that order. This costs W times the traffic of a ring all-reduce; it is
// what makes a W-rank step reproduce a one-process step exactly (docs/distributed.md).
//
// Thread safety: one thread calls the collectives (the training thread). rank() and size() are
// constant after construction. At most one MPI communicator may exist in a process, over its
// lifetime (MPI may be initialised once).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/status.h"

namespace skiff::dist {

struct CommOptions {
  // How long one collective may wait for the other ranks before it fails (> 0).
  double timeout_seconds = 60;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Replaces `values` on every rank by the element-wise sum of every rank's `values` (all the
  // same length). `what` names the data in error messages ("gradients"). Floating point: in rank
  // order (see above); int64: exact.
  virtual Status AllReduceSum(std::span<float> values, std::string_view what) = 0;
  virtual Status AllReduceSum(std::span<double> values, std::string_view what) = 0;
  virtual Status AllReduceSum(std::span<int64_t> values, std::string_view what) = 0;
  // Replaces *bytes on every rank by rank `root`'s (any length).
  virtual Status Broadcast(std::string* bytes, int root, std::string_view what) = 0;
  // Every rank's `bytes` (any length, per rank), indexed by rank, on every rank.
  virtual Result<std::vector<std::string>> AllGather(std::string_view bytes,
                                                     std::string_view what) = 0;
  // Personalised exchange: sends to_each[r] (to_each.size() == size(), any lengths) to rank r and
  // returns, indexed by rank, what every rank sent to this one (this rank's own part handed back).
  // Owned-partition runs ask the owners of remote nodes for their rows with it.
  virtual Result<std::vector<std::string>> AllToAll(std::vector<std::string> to_each,
                                                    std::string_view what) = 0;
  // Returns when every rank has called it.
  virtual Status Barrier(std::string_view what) = 0;

  // Ends every process of the job with a non-zero exit status after printing `why` (rank-tagged)
  // to stderr. The one-process communicator exits the process with status 1.
  [[noreturn]] virtual void Abort(const Status& why) = 0;
};

// The communicator of a process that runs alone: rank 0 of 1.
std::unique_ptr<Communicator> CreateLocalCommunicator();

// `size` communicators over ranks that are threads of this process (rank r is element r), for
// tests of multi-rank code without MPI and for running several ranks in one process. Each must
// be driven by its own thread; a collective some rank does not join within
// options.timeout_seconds fails with Aborted, as the MPI communicator's. Abort() ends the process.
std::vector<std::unique_ptr<Communicator>> CreateThreadCommunicators(int size,
                                                                     const CommOptions& options);

// Whether this build has the MPI communicator.
bool HaveMpi();

// Initialises MPI (the process must have been started by mpirun, or alone: then it is rank 0 of
// 1) and returns the communicator over every process of the job. Unavailable, saying so, when
// the build has no MPI; InvalidArgument for a timeout <= 0; Internal when MPI fails to start.
Result<std::unique_ptr<Communicator>> CreateMpiCommunicator(const CommOptions& options);

}  // namespace skiff::dist
