// `ferry moe make-tiny --gguf TYPE`: a random-weight model written directly as the GGUF file that
// `make-tiny` followed by `ferry moe quantize --type TYPE` would write (the same tensors, names,
// shapes, types of llama-quantize's mix and metadata: write_gguf_model, gguf_export.h), at any
// size and at about the disk's speed, without ever holding the model in float32.
//
// Weights follow make-tiny's distributions (random_tensor_specs, tiny_model.h): linear layers
// N(0, 1/fan_in), embedding N(0, 1), norms N(1, 0.05²). Quantizing 47 B floats (Mixtral-8x7B)
// with the reference quantizers would take hours, so each quantized tensor is filled with whole
// blocks copied from a pool:
//
//   pool(type, mean, σ) = quantize_row(type, kPoolBlocks · block_elems draws of N(mean, σ²))
//   block b of row r of tensor T = pool[splitmix64(seed, T, r)_b mod kPoolBlocks]
//
// Each block is a valid block of `type` (K-quants: whole 256-weight super-blocks with their
// scales) of the right scale, so every weight is distributed as a quantized N(mean, σ²) draw; what
// is lost is independence between blocks that picked the same pool entry, which a benchmark does
// not see. Float tensors (F32, F16, BF16: norms, the router, every weight of an F32/F16 file) are
// drawn directly (Box–Muller). The same seed writes the same bytes, whatever the thread count.
//
// Vocabulary (random_gguf_vocabulary): ferry's byte vocabulary for 256 tokens (what make-tiny and
// quantize write); for more, a SentencePiece-style "llama" vocabulary as llama.cpp's converter
// writes Mixtral's: <unk>, <s>, </s>, the byte pieces <0x00>..<0xFF>, then normal pieces ("▁",
// letters, and letter strings with and without "▁" up to the size asked), BOS 1 and EOS 2.
#pragma once

#include <cstdint>
#include <string>

#include "moe/model/config.h"
#include "moe/model/gguf_export.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

struct RandomGgufOptions {
  MoeConfig config;        // the model's shape, as make-tiny takes it (prepare_tiny_config'd)
  std::uint64_t seed = 1;  // weight seed: the same seed writes the same bytes
  GgufExportOptions gguf;  // file type, --pure, filling threads, general.name (default: the file's stem)
};

// Writes the model to `out_path`. InvalidArgument for a shape or vocabulary the file type or the
// family's GGUF layout cannot hold (e.g. rows that are not whole blocks), IoError for an
// unwritable path or a file larger than the free space.
GgufExportReport write_random_gguf(const std::string& out_path, const RandomGgufOptions& options);

// The vocabulary of a random GGUF model of `n` tokens (see above). InvalidArgument unless n is
// 256 or at least 260.
TokenizerVocab random_gguf_vocabulary(int n);

}  // namespace ferry::moe
