// The file link: experts are read from the checkpoint on disk with O_DIRECT (no page cache), for
// CPU-only machines whose RAM cannot hold every expert. Each of the expert's three projections is
// read in aligned chunks into an aligned bounce buffer, then copied as stored (a GGUF file: the
// quantized blocks the kernels compute on, reordered into the kernels' row groups chunk by chunk)
// or converted to float32 (a safetensors checkpoint).
// Up to LinkSpec::reads_in_flight chunks are read at once (chunk_readers.h), in slot order.
// Where the filesystem refuses O_DIRECT (tmpfs), it falls back to buffered reads. A file that
// changes size or modification time while the experts stream from it is a FormatError naming it;
// one that ends early, an IoError; an expert holding a NaN or Inf scale or value, a FormatError
// naming the tensor, layer and expert (finite_blocks.h), checked chunk by chunk where the bytes land.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <map>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/file.h"
#include "core/units.h"
#include "moe/model/checkpoint.h"
#include "moe/model/finite_blocks.h"
#include "moe/quant/row_groups.h"
#include "moe/store/chunk_readers.h"
#include "moe/store/host_pool.h"
#include "moe/store/link.h"

namespace ferry::moe {
namespace {

constexpr std::uint64_t kAlign = 4096;

// A file the link reads, with what it was when opened.
struct OpenFile {
  std::string path;
  UniqueFd fd;
  struct stat opened {};
};

// One projection of an expert: where the file holds it and where its bytes go in the slot.
struct Piece {
  const OpenFile* file;
  std::uint64_t offset = 0, len = 0;  // in the file
  std::uint64_t dst = 0;              // in the slot
  bool as_stored = true;              // copied; else converted from `dtype` to float32
  DType dtype = DType::kF32;
  quant::QuantType type = quant::QuantType::kF32;  // of the bytes in the slot (as stored, or float32)
  std::string name;                                // the tensor, for messages
  std::uint64_t cols = 0;                          // weights per row
  // Bytes of one group of quant::kRowGroup rows as stored where the kernels keep the rows in
  // groups (row_groups.h): chunks are then whole groups, reordered as they land; else 0.
  std::uint64_t group_bytes = 0;
  std::uint64_t in_elem() const { return as_stored ? 1 : dtype_size(dtype); }
  std::uint64_t out_elem() const { return as_stored ? 1 : 4; }
  std::uint64_t out_len() const { return len / in_elem() * out_elem(); }
};

// Piece::group_bytes of a matrix of `type` with rows of `cols` weights.
std::uint64_t group_bytes(quant::QuantType type, std::int64_t cols) {
  return quant::has_row_groups(type) ? quant::kRowGroup * quant::quant_row_bytes(type, static_cast<std::size_t>(cols)) : 0;
}

bool same_layout(const ExpertLayout& a, const ExpertLayout& b) {
  return a.format == b.format && a.down_format == b.down_format && a.layer_down == b.layer_down;
}

class FileLink : public Link {
 public:
  FileLink(const LinkSpec& spec, const Checkpoint* ck, const ExpertLayout& layout)
      : spec_(spec), ck_(ck), names_(ck->config()), layout_(layout) {
    FERRY_REQUIRE(ck_ != nullptr, "the file link needs the checkpoint");
    if (ck_->gguf() != nullptr) {
      const ExpertLayout stored = expert_layout_as_stored(*ck_);
      FERRY_REQUIRE(same_layout(stored, layout_), "--link file streams the experts of GGUF '", ck_->dir(),
                    "' as the file stores them (", stored.format_name(), "); --weights ", layout_.format_name(),
                    " would convert them on every read: drop --weights, or write the file in that type ",
                    "(ferry moe quantize)");
      open_file(ck_->gguf()->path());
    } else {
      // A safetensors checkpoint holds float experts; a block format would be quantized on every read.
      FERRY_REQUIRE(layout_.format == quant::QuantType::kF32 && layout_.down_format == quant::QuantType::kF32,
                    "--link file streams a safetensors checkpoint's experts as float32; experts in ",
                    layout_.format_name(), " stream from a GGUF file in that type (ferry moe quantize), or ",
                    "need the host pool (another --link)");
      for (const auto& f : ck->files()) by_shard_.emplace(f.get(), open_file(f->path()));
    }
    chunk_ = std::max<std::uint64_t>(kAlign, spec.chunk_bytes / kAlign * kAlign);
    // A chunk is at least one row group (a few tens of KB at today's shapes; chunk_ is 1 MB).
    std::uint64_t buffer = std::max(chunk_, group_bytes(layout_.format, layout_.hidden));
    const std::vector<quant::QuantType> downs = layout_.layer_down.empty() ? std::vector{layout_.down_format} : layout_.layer_down;
    for (quant::QuantType d : downs) buffer = std::max(buffer, group_bytes(d, layout_.intermediate));
    readers_ = std::make_unique<ChunkReaders>(spec.reads_in_flight, buffer + 2 * kAlign, kAlign);
    if (spec_.bandwidth_bytes_per_s <= 0) calibrate();
  }

  // `from` counts slot bytes delivered, in the order w1, w3, w2; a resumed call skips them. Chunks
  // are handed to the readers in that order and every one handed out is complete before this
  // returns, so what it delivered is always a prefix. Each chunk lands in the kernels' layout:
  // a matrix kept in row groups is read in chunks of whole groups, reordered by the reader from
  // its buffer into the slot (on the readers' threads, while the next chunks are read, instead of
  // a pass over the whole expert on this thread after the last one).
  std::uint64_t transfer(ExpertId id, std::byte* dst, std::uint64_t from, const std::atomic<bool>& stop) override {
    const double begin = now_s() + spec_.latency_s;
    std::uint64_t moved = 0;    // by this call
    std::uint64_t skipped = 0;  // slot bytes of earlier projections (or parts) already delivered
    const std::vector<Piece> parts = pieces(id);
    for (std::size_t k = 0; k < parts.size(); ++k)
      if (k == 0 || parts[k].file != parts[k - 1].file) check_unchanged(*parts[k].file);  // a GGUF: once
    const std::string expert = what(id);
    for (const Piece& p : parts) {
      if (stop.load(std::memory_order_relaxed)) break;
      if (skipped + p.out_len() <= from) {
        skipped += p.out_len();
        continue;
      }
      std::uint64_t done = from > skipped ? (from - skipped) / p.out_elem() * p.in_elem() : 0;  // file bytes
      skipped = from;
      while (done < p.len && !stop.load(std::memory_order_relaxed)) {
        const std::uint64_t unit = p.group_bytes != 0 ? p.group_bytes : p.in_elem();
        const std::uint64_t want = std::min(std::max(unit, chunk_ / unit * unit), p.len - done);
        // `p`, `dst` and `expert` outlive the job: drain() below waits for it.
        readers_->submit([&p, dst, done, want, &expert](std::byte* buffer) {
          const std::byte* src = read(*p.file, p.offset + done, want, buffer);
          if (p.group_bytes != 0) {  // whole groups (the last chunk: the rest of the rows)
            require_finite_blocks(p.type, src, want, p.name, p.file->path, expert,
                                  done / quant::quant_traits(p.type).block_bytes);
            const std::uint64_t row = p.group_bytes / quant::kRowGroup;
            quant::to_row_groups(p.type, src, dst + p.dst + done, want / row, p.cols);
            return;
          }
          if (p.as_stored)
            std::memcpy(dst + p.dst + done, src, want);
          else
            convert_to_f32(p.dtype, src, reinterpret_cast<float*>(dst + p.dst) + done / p.in_elem(), want / p.in_elem());
          // Checked where the bytes land, chunk by chunk while they are still in cache (cheaper
          // than a pass over the whole expert after it has left the cache).
          require_finite_blocks(p.type, dst + p.dst, done / p.in_elem() * p.out_elem(),
                                (done + want) / p.in_elem() * p.out_elem(), p.name, p.file->path, expert);
        });
        done += want;
        moved += want / p.in_elem() * p.out_elem();
        if (spec_.bandwidth_bytes_per_s > 0)
          sleep_until_s(begin + static_cast<double>(moved) / spec_.bandwidth_bytes_per_s);
      }
    }
    readers_->drain();  // rethrows a read's error
    return moved;
  }

  double estimate_s(std::uint64_t bytes) const override {
    if (spec_.bandwidth_bytes_per_s > 0) return spec_.latency_s + static_cast<double>(bytes) / spec_.bandwidth_bytes_per_s;
    return static_cast<double>(bytes) * measured_s_per_byte_;  // unpaced: what this disk did at open
  }

  std::string describe() const override {
    std::string s = std::string("file (") + (direct_ ? "O_DIRECT" : "buffered: O_DIRECT refused") + ", " +
                    std::to_string(readers_->readers()) + " reads in flight)";
    if (spec_.bandwidth_bytes_per_s <= 0)
      s += ", measured " + format_bandwidth(1.0 / std::max(1e-15, measured_s_per_byte_)) + " of " +
           layout_.format_name() + " experts";
    if (spec_.bandwidth_bytes_per_s > 0) s += " paced to " + format_bandwidth(spec_.bandwidth_bytes_per_s);
    return s;
  }

 private:
  LinkSpec spec_;
  const Checkpoint* ck_;  // owned by the engine, outlives the link
  TensorNames names_;
  ExpertLayout layout_;
  std::uint64_t chunk_ = 0;
  bool direct_ = true;
  double measured_s_per_byte_ = 0;  // unpaced: seconds per slot byte delivered, timed at open
  std::vector<std::unique_ptr<OpenFile>> files_;
  std::map<const SafetensorsFile*, const OpenFile*> by_shard_;
  std::unique_ptr<ChunkReaders> readers_;  // after the files: its threads stop before they close

  const OpenFile* open_file(const std::string& path) {
    auto f = std::make_unique<OpenFile>();
    f->path = path;
    f->fd = UniqueFd::try_open(path, O_RDONLY | O_DIRECT);
    direct_ = direct_ && f->fd.valid();
    if (!f->fd.valid()) f->fd = UniqueFd::open(path, O_RDONLY);
    if (::fstat(f->fd.get(), &f->opened) != 0) FERRY_THROW(IoError, "cannot stat '", path, "': ", std::strerror(errno));
    files_.push_back(std::move(f));
    return files_.back().get();
  }

  // "layer 3, expert 5" (the decoder layer: the GGUF's blk.N) for messages.
  std::string what(ExpertId id) const {
    return "layer " + std::to_string(ck_->config().decoder_layer(id.layer)) + ", expert " + std::to_string(id.expert);
  }

  // The model was checked when opened; a file replaced or rewritten since would be read as garbage.
  static void check_unchanged(const OpenFile& f) {
    struct stat now {};
    if (::fstat(f.fd.get(), &now) != 0) FERRY_THROW(IoError, "cannot stat '", f.path, "': ", std::strerror(errno));
    if (now.st_size != f.opened.st_size || now.st_mtim.tv_sec != f.opened.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != f.opened.st_mtim.tv_nsec)
      FERRY_THROW(FormatError, "'", f.path, "' changed while its experts were streaming from it (", f.opened.st_size,
                  " bytes when opened, now ", now.st_size, ", modified since)");
  }

  // Reads `len` bytes at `pos` (at most a chunk: chunk_, or one row group where that is larger)
  // through `bounce` (a reader's aligned buffer of that many bytes + 2 kAlign); returns them.
  static const std::byte* read(const OpenFile& f, std::uint64_t pos, std::uint64_t len, std::byte* bounce) {
    const std::uint64_t aligned = pos / kAlign * kAlign;
    const std::uint64_t span = (pos - aligned + len + kAlign - 1) / kAlign * kAlign;
    std::uint64_t got = 0;
    while (got < pos - aligned + len) {
      ssize_t r = ::pread(f.fd.get(), bounce + got, span - got, static_cast<off_t>(aligned + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) FERRY_THROW(IoError, "read of '", f.path, "' at ", aligned + got, " failed: ",
                              r < 0 ? std::strerror(errno) : "unexpected end of file");
      got += static_cast<std::uint64_t>(r);
    }
    return bounce + (pos - aligned);
  }

  // Expert `id`'s three projections in slot order.
  std::vector<Piece> pieces(ExpertId id) const {
    const ExpertLayout L = layout_.of_layer(id.layer);
    const int which[3] = {1, 3, 2};
    const std::uint64_t offsets[3] = {L.w1_offset(), L.w3_offset(), L.w2_offset()};
    const std::int64_t cols[3] = {L.hidden, L.hidden, L.intermediate};
    std::vector<Piece> out;
    for (int t = 0; t < 3; ++t) {
      const std::string name = names_.expert(ck_->config().decoder_layer(id.layer), id.expert, which[t]);
      if (const GgufModel* g = ck_->gguf()) {
        const StoredTensor s = g->stored(name);
        out.push_back({files_.front().get(), s.file_offset, s.bytes.size(), offsets[t], true, DType::kF32, s.type,
                       s.gguf_name, static_cast<std::uint64_t>(cols[t]), group_bytes(s.type, cols[t])});
      } else {
        const TensorRef ref = ck_->at(name);
        out.push_back({by_shard_.at(ref.file), ref.file->file_offset(*ref.info), ref.info->nbytes(), offsets[t], false,
                       ref.info->dtype, quant::QuantType::kF32, name, static_cast<std::uint64_t>(cols[t]), 0});
      }
    }
    return out;
  }

  // The policies' transfer cost on an unpaced link is this disk's: two experts read at open, as
  // every transfer will be.
  void calibrate() {
    std::vector<std::byte> scratch(layout_.bytes());
    const std::atomic<bool> never(false);
    const int n = std::min(2, ck_->config().num_experts);
    const double t0 = now_s();
    std::uint64_t bytes = 0;
    for (int e = 0; e < n; ++e) bytes += transfer({0, e}, scratch.data(), 0, never);
    measured_s_per_byte_ = (now_s() - t0) / static_cast<double>(std::max<std::uint64_t>(1, bytes));
  }
};

}  // namespace

std::unique_ptr<Link> make_file_link(const LinkSpec& spec, const LinkSource& source) {
  FERRY_REQUIRE(source.checkpoint != nullptr, "--link file needs a checkpoint on disk");
  FERRY_REQUIRE(source.pool != nullptr, "--link file needs the host pool's layout");
  return std::make_unique<FileLink>(spec, source.checkpoint, source.pool->layout());
}

}  // namespace ferry::moe
