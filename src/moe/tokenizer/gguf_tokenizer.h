// The tokenizer stored in a GGUF file (tokenizer.ggml.*, as gguf_tokenizer_metadata writes it),
// built with ferry's tokenizer classes:
//   - model "gpt2" whose first 256 tokens are GPT-2's byte symbols, without merges and with every
//     other token unused: ferry's byte vocabulary (ByteTokenizer);
//   - model "gpt2" with merges: byte-level BPE (bpe_tokenizer.h) from tokens, merges and types
//     (normal tokens are the BPE vocabulary, control and user-defined ones added tokens, unused
//     ones skipped), the pre-tokenizer of tokenizer.ggml.pre ("default" when absent) as its
//     registry entry gives it (gguf_pre_tokenizer.h), a BOS prepended when
//     tokenizer.ggml.add_bos_token is true.
//   - model "llama": SentencePiece-style, from tokens, scores and types (spm_tokenizer.h), with
//     tokenizer.ggml.add_space_prefix (default true) and a BOS prepended unless
//     tokenizer.ggml.add_bos_token is false; ids absent from the file are llama.cpp's defaults
//     (unknown 0, BOS 1, EOS 2); remove_extra_whitespaces and a precompiled_charsmap
//     (normalizers) are refused.
// Any other model or pre-tokenizer is refused with a FormatError naming the file and the value.
#pragma once

#include <memory>

#include "moe/quant/gguf_file.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

// Whether the file holds ferry's byte vocabulary.
bool gguf_byte_vocabulary(const quant::GgufFile& file);
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const quant::GgufFile& file);

}  // namespace ferry::moe
