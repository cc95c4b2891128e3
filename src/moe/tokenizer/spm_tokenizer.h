// A SentencePiece-style tokenizer built from a vocabulary alone (pieces, scores and types, as a
// GGUF file with tokenizer.ggml.model "llama" stores them), encoding as llama.cpp's SPM tokenizer
// (llm_tokenizer_spm in llama-vocab.cpp) and SentencePiece's BPE model do:
//   1. control and user-defined pieces are found in the text (leftmost-longest) and emitted whole;
//   2. each plain segment gets a leading space when add_space_prefix is set and it starts the
//      text or follows such a piece; spaces become U+2581 ("▁");
//   3. the segment is cut into UTF-8 characters, and adjacent symbols are merged, highest score of
//      the merged normal piece first (leftmost on ties), until no adjacent pair is a normal piece;
//   4. a final symbol that is no normal piece becomes its bytes' <0xXX> pieces (byte fallback), or
//      the unknown piece when the vocabulary has no byte pieces.
// decode: normal pieces with "▁" as spaces, byte pieces as their byte, control, user-defined and
// unknown pieces as their text; with add_space_prefix, the space that starts the first piece is
// removed (as SentencePiece removes its dummy prefix).
#pragma once

#include <memory>

#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

struct SpmTokenizerOptions {
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix (llama.cpp's default: true)
  int bos_id = -1;               // prepended by callers when >= 0 (tokenizer.ggml.add_bos_token)
};

// `vocab.kind` must be kSentencePiece with one score and one type per piece; `origin` names the
// file in errors (FormatError).
std::unique_ptr<Tokenizer> make_spm_tokenizer(TokenizerVocab vocab, const SpmTokenizerOptions& options,
                                              const std::string& origin);

}  // namespace ferry::moe
