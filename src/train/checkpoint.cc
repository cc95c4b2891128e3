#include "train/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <utility>

#include "core/atomic_write.h"
#include "core/error.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'S', 'T', '1'};
constexpr char kEndMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'E', 'N', 'D'};
constexpr std::uint32_t kFloats = 0, kU64 = 1, kF64 = 2, kBytes = 3;
constexpr std::size_t kTrailerBytes = 8 + 8 + 8;  // end magic, record count, hash

void append(std::vector<std::byte>& out, const void* data, std::size_t n) {
  const auto* p = static_cast<const std::byte*>(data);
  out.insert(out.end(), p, p + n);
}

// Iterations of a complete checkpoint directory name "ckpt-N", or -1.
std::int64_t checkpoint_iterations(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name.rfind("ckpt-", 0) != 0 || name.size() <= 5) return -1;
  const std::string digits = name.substr(5);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoll(digits);
}

}  // namespace

std::uint64_t fnv1a64(std::span<const std::byte> bytes) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64: offset basis 0xcbf29ce484222325
  for (std::byte b : bytes) {
    h ^= static_cast<std::uint64_t>(b);
    h *= 1099511628211ull;
  }
  return h;
}

// ---- StateWriter / StateReader -------------------------------------------------------------
// Layout: magic; records (u32 name length, name, u32 type, u64 count, data); trailer (end magic,
// u64 record count, u64 FNV-1a of everything before the trailer).

void StateWriter::record(const std::string& name, std::uint32_t type, std::uint64_t count, const void* data,
                         std::size_t bytes) {
  const auto len = static_cast<std::uint32_t>(name.size());
  append(body_, &len, sizeof len);
  append(body_, name.data(), name.size());
  append(body_, &type, sizeof type);
  append(body_, &count, sizeof count);
  if (bytes) append(body_, data, bytes);
  ++records_;
}

void StateWriter::put(const std::string& name, std::span<const float> values) {
  record(name, kFloats, values.size(), values.data(), values.size_bytes());
}
void StateWriter::put_u64(const std::string& name, std::uint64_t value) { record(name, kU64, 1, &value, sizeof value); }
void StateWriter::put_f64(const std::string& name, double value) { record(name, kF64, 1, &value, sizeof value); }
void StateWriter::put_bytes(const std::string& name, std::span<const std::byte> bytes) {
  record(name, kBytes, bytes.size(), bytes.data(), bytes.size());
}

std::vector<std::byte> StateWriter::bytes() const {
  std::vector<std::byte> out;
  out.reserve(sizeof kMagic + body_.size() + kTrailerBytes);
  append(out, kMagic, sizeof kMagic);
  out.insert(out.end(), body_.begin(), body_.end());
  const std::uint64_t hash = fnv1a64(out);
  append(out, kEndMagic, sizeof kEndMagic);
  append(out, &records_, sizeof records_);
  append(out, &hash, sizeof hash);
  return out;
}

void StateWriter::write_file(const std::string& path) const { write_file_atomic(path, bytes()); }

StateReader StateReader::read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FERRY_THROW(IoError, "cannot open checkpoint file ", path);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(std::as_bytes(std::span<const char>(raw)), path);
}

StateReader StateReader::parse(std::span<const std::byte> bytes, const std::string& what) {
  StateReader r;
  r.what_ = what;
  auto bad = [&](const char* why) { FERRY_THROW(FormatError, "checkpoint file ", what, " is ", why); };
  if (bytes.size() < sizeof kMagic + kTrailerBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    bad("not a ferry state file (or truncated)");
  const std::size_t body_end = bytes.size() - kTrailerBytes;
  std::uint64_t count = 0, hash = 0;
  if (std::memcmp(bytes.data() + body_end, kEndMagic, sizeof kEndMagic) != 0) bad("truncated (no end marker)");
  std::memcpy(&count, bytes.data() + body_end + 8, 8);
  std::memcpy(&hash, bytes.data() + body_end + 16, 8);
  if (fnv1a64(bytes.first(body_end)) != hash) bad("corrupt (hash mismatch)");
  std::size_t pos = sizeof kMagic;
  auto take = [&](void* out, std::size_t n) {
    if (pos + n > body_end) bad("corrupt (record past the end)");
    if (n > 0) std::memcpy(out, bytes.data() + pos, n);  // an empty record may have no buffer
    pos += n;
  };
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint32_t len = 0, type = 0;
    std::uint64_t n = 0;
    take(&len, sizeof len);
    std::string name(len, '\0');
    take(name.data(), len);
    take(&type, sizeof type);
    take(&n, sizeof n);
    const std::size_t elem = type == kFloats ? 4 : type == kBytes ? 1 : 8;
    if (type > kBytes || n > (body_end - pos) / elem) bad("corrupt (bad record)");
    Record rec{type, std::vector<std::byte>(n * elem), n};
    take(rec.data.data(), rec.data.size());
    r.records_[name] = std::move(rec);
  }
  if (pos != body_end) bad("corrupt (trailing bytes)");
  return r;
}

const StateReader::Record& StateReader::get(const std::string& name, std::uint32_t type) const {
  auto it = records_.find(name);
  if (it == records_.end()) FERRY_THROW(FormatError, "checkpoint file ", what_, " has no record '", name, "'");
  if (it->second.type != type)
    FERRY_THROW(FormatError, "checkpoint file ", what_, ": record '", name, "' has the wrong type");
  return it->second;
}

void StateReader::floats_into(const std::string& name, std::span<float> out) const {
  const Record& r = get(name, kFloats);
  if (r.count != out.size())
    FERRY_THROW(FormatError, "checkpoint file ", what_, ": record '", name, "' has ", r.count, " values, expected ",
                out.size(), " (another model or configuration?)");
  if (!out.empty()) std::memcpy(out.data(), r.data.data(), out.size_bytes());
}

std::vector<float> StateReader::floats(const std::string& name) const {
  const Record& r = get(name, kFloats);
  std::vector<float> out(r.count);
  if (!out.empty()) std::memcpy(out.data(), r.data.data(), r.data.size());
  return out;
}

std::uint64_t StateReader::u64(const std::string& name) const {
  std::uint64_t v;
  std::memcpy(&v, get(name, kU64).data.data(), sizeof v);
  return v;
}

double StateReader::f64(const std::string& name) const {
  double v;
  std::memcpy(&v, get(name, kF64).data.data(), sizeof v);
  return v;
}

std::vector<std::byte> StateReader::bytes(const std::string& name) const { return get(name, kBytes).data; }

// ---- directories ---------------------------------------------------------------------------

std::string checkpoint_dir(const std::string& root, std::int64_t iterations) {
  char name[32];
  std::snprintf(name, sizeof name, "ckpt-%08lld", static_cast<long long>(iterations));
  return (fs::path(root) / name).string();
}

std::string checkpoint_tmp_dir(const std::string& root, std::int64_t iterations) {
  return checkpoint_dir(root, iterations) + ".tmp";
}

std::string worker_state_path(const std::string& dir, int rank) {
  return (fs::path(dir) / ("worker-" + std::to_string(rank) + ".state")).string();
}

std::string server_state_path(const std::string& dir, int server_index) {
  return (fs::path(dir) / ("server-" + std::to_string(server_index) + ".state")).string();
}

void finalize_checkpoint(const std::string& root, std::int64_t iterations, const nlohmann::json& meta, int keep) {
  const std::string tmp = checkpoint_tmp_dir(root, iterations);
  const std::string dir = checkpoint_dir(root, iterations);
  write_file_atomic((fs::path(tmp) / "meta.json").string(), meta.dump(2) + "\n");  // also syncs tmp
  std::error_code ec;
  if (fs::exists(dir)) fs::remove_all(dir, ec);  // a checkpoint of the same iteration from an earlier run
  rename_path(tmp, dir);
  sync_directory(root);
  // Keep the newest `keep`; drop stale temporary directories of earlier iterations (a later
  // one may be being written: ranks that do not communicate every step can run ahead).
  std::vector<std::pair<std::int64_t, fs::path>> complete;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.substr(name.size() - 4) == ".tmp") {
      const std::int64_t n = checkpoint_iterations(e.path().parent_path() / name.substr(0, name.size() - 4));
      if (n >= 0 && n < iterations) fs::remove_all(e.path(), ec);
      continue;
    }
    std::int64_t n = checkpoint_iterations(e.path());
    if (n >= 0) complete.emplace_back(n, e.path());
  }
  std::sort(complete.begin(), complete.end());
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < complete.size(); ++i)
    fs::remove_all(complete[i].second, ec);
}

std::string find_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) FERRY_THROW(InvalidArgument, "--resume ", path, ": no such directory");
  if (fs::exists(fs::path(path) / "meta.json", ec)) return path;
  std::int64_t best = -1;
  std::string best_dir;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    std::int64_t n = checkpoint_iterations(e.path());
    if (n > best && fs::exists(e.path() / "meta.json", ec)) {
      best = n;
      best_dir = e.path().string();
    }
  }
  if (best < 0) FERRY_THROW(InvalidArgument, "--resume ", path, ": no complete checkpoint (ckpt-*/meta.json) in it");
  return best_dir;
}

nlohmann::json read_checkpoint_meta(const std::string& dir) {
  const std::string path = (fs::path(dir) / "meta.json").string();
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot open ", path);
  try {
    nlohmann::json meta = nlohmann::json::parse(in);
    for (const char* key : {"iterations", "config", "format"})
      if (!meta.contains(key)) FERRY_THROW(FormatError, path, " lacks '", key, "'");
    if (meta["format"] != "ferry-checkpoint-1") FERRY_THROW(FormatError, path, " has an unknown format");
    return meta;
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "cannot parse ", path, ": ", e.what());
  }
}

void check_resumable(const nlohmann::json& meta, const nlohmann::json& now, const WorldLayout& world,
                     const std::string& dir) {
  const nlohmann::json& saved = meta["config"];
  const nlohmann::json saved_world = meta.value("world", nlohmann::json::object());
  auto differ = [&](const char* what, const std::string& was, const std::string& is) {
    FERRY_THROW(InvalidArgument, "--resume ", dir, ": the checkpoint is of ", what, " ", was, ", this run has ", is,
                " (a checkpoint only continues the same model, algorithm and world size)");
  };
  for (const std::string key : {"model", "algo", "codec"}) {
    std::string was = saved.value(key, std::string("?")), is = now[key].get<std::string>();
    // Another algorithm is named by its name; the same one with other options by its whole spec.
    if (key == "algo" && algo_name(was) != algo_name(is)) std::tie(was, is) = std::pair(algo_name(was), algo_name(is));
    if (was != is) differ(("--" + key).c_str(), was, is);
  }
  const std::string saved_topo = saved_world.value("topology", std::string("?"));
  const std::string topo = world.num_servers > 0 ? "ps" : "allreduce";
  if (saved_topo != topo) differ("--topology", saved_topo, topo);
  const int saved_np = saved_world.value("workers", -1), saved_servers = saved_world.value("servers", -1);
  if (saved_np != world.num_workers || saved_servers != world.num_servers)
    differ("world size", "--np " + std::to_string(saved_np) + " --servers " + std::to_string(saved_servers),
           "--np " + std::to_string(world.num_workers) + " --servers " + std::to_string(world.num_servers));
  const std::int64_t batch = now.value("batch", std::int64_t{-1});
  if (saved.value("batch", std::int64_t{-1}) != batch)
    differ("--batch", std::to_string(saved.value("batch", std::int64_t{-1})), std::to_string(batch));
}

}  // namespace ferry::train
