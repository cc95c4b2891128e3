// Checkpoints of `ferry train` (docs/reliability.md, "Checkpoints"): one directory per
// checkpoint, holding everything needed to continue the run exactly.
//
//   ROOT/ckpt-00000120/          (120 = iterations done)
//     meta.json                  the run's configuration, iteration, epoch, world, file list
//     worker-<rank>.state        each worker's state (local weights, optimizer velocity, codec
//                                residuals, delay buffers, loss average)
//     server-<index>.state       each parameter server's shard (global weights, velocity, version)
//
// Atomicity: every rank writes its file into ROOT/ckpt-N.tmp/ (file.part, fsync, rename), rank 0
// writes meta.json last, fsyncs, and renames the directory to ROOT/ckpt-N, then fsyncs ROOT. A
// crash at any point leaves either the complete new checkpoint or none: a .tmp directory, or
// one without meta.json, is never picked up, and every state file carries a hash of its bytes
// so a truncated or corrupted file is a FormatError naming it.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/strategy.h"

namespace ferry::train {

// Named records (float vectors, integers, doubles, byte blobs) serialised to one file with a
// hash trailer.
class StateWriter {
 public:
  void put(const std::string& name, std::span<const float> values);
  void put_u64(const std::string& name, std::uint64_t value);
  void put_f64(const std::string& name, double value);
  void put_bytes(const std::string& name, std::span<const std::byte> bytes);
  // Replaces `path` atomically (write_file_atomic: path.part, fsync, rename, fsync of the
  // directory); IoError naming the path on failure.
  void write_file(const std::string& path) const;
  // The serialised bytes (for tests).
  std::vector<std::byte> bytes() const;

 private:
  void record(const std::string& name, std::uint32_t type, std::uint64_t count, const void* data, std::size_t bytes);
  std::vector<std::byte> body_;
  std::uint64_t records_ = 0;
};

class StateReader {
 public:
  // Reads and verifies a file written by StateWriter; FormatError naming `path` when it is
  // truncated, corrupt or not a state file, IoError when it cannot be read.
  static StateReader read_file(const std::string& path);
  static StateReader parse(std::span<const std::byte> bytes, const std::string& what);

  bool has(const std::string& name) const { return records_.count(name) != 0; }
  // The float record `name`, which must have exactly `expected` values (FormatError otherwise).
  void floats_into(const std::string& name, std::span<float> out) const;
  std::vector<float> floats(const std::string& name) const;
  std::uint64_t u64(const std::string& name) const;
  double f64(const std::string& name) const;
  std::vector<std::byte> bytes(const std::string& name) const;
  // The file (or text) this was read from, for error messages.
  const std::string& what() const { return what_; }

 private:
  struct Record {
    std::uint32_t type = 0;
    std::vector<std::byte> data;
    std::uint64_t count = 0;
  };
  const Record& get(const std::string& name, std::uint32_t type) const;
  std::string what_;
  std::map<std::string, Record> records_;
};

// ROOT/ckpt-<iterations, 8 digits> and its temporary name.
std::string checkpoint_dir(const std::string& root, std::int64_t iterations);
std::string checkpoint_tmp_dir(const std::string& root, std::int64_t iterations);
std::string worker_state_path(const std::string& dir, int rank);
std::string server_state_path(const std::string& dir, int server_index);

// Rank 0, once every rank's state file is in checkpoint_tmp_dir(root, iterations): writes
// meta.json, makes the checkpoint visible atomically, and removes all but the newest `keep`
// checkpoints (and stale .tmp directories).
void finalize_checkpoint(const std::string& root, std::int64_t iterations, const nlohmann::json& meta, int keep);

// The checkpoint `path` names: `path` itself when it holds meta.json, else the newest complete
// ckpt-* directory inside it. InvalidArgument naming --resume when there is none.
std::string find_checkpoint(const std::string& path);
// meta.json of a checkpoint directory (FormatError naming it when unreadable).
nlohmann::json read_checkpoint_meta(const std::string& dir);
// Throws InvalidArgument naming --resume and the differing setting when the checkpoint was
// written by another model, algorithm, topology, codec, batch or world size than those of
// `config` (the job's, train_job.h's job_config()) and `world`.
void check_resumable(const nlohmann::json& meta, const nlohmann::json& config, const WorldLayout& world,
                     const std::string& dir);

// FNV-1a 64 of a byte range (state-file trailers, weight checksums in the summary).
std::uint64_t fnv1a64(std::span<const std::byte> bytes);

}  // namespace ferry::train
