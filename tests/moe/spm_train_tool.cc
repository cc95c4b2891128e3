// Trains a SentencePiece model for the tests (SentencePiece's own trainer): every argument is one
// trainer flag ("--input=F", "--model_prefix=P", ...). Built apart from the tests, which link
// libtorch, because libsentencepiece_train bundles protobuf symbols that clash with libtorch's.
#include <iostream>
#include <string>

#include <sentencepiece_trainer.h>

int main(int argc, char** argv) {
  std::string flags;
  for (int i = 1; i < argc; ++i) flags += std::string(i > 1 ? " " : "") + argv[i];
  const auto status = sentencepiece::SentencePieceTrainer::Train(flags);
  if (!status.ok()) {
    std::cerr << "spm_train_tool: " << status.ToString() << "\n";
    return 1;
  }
  return 0;
}
