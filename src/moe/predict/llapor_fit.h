// Fitting LLaPor (libtorch): PCA per layer (hidden mode), then one small network per layer or per
// layer group, trained with binary cross entropy on "is expert e of layer l+1+d activated" for
// d < lookahead, Adam, dropout, on the training sequences of a trace; scored on held-out ones.
//
// Grouping (LlaporFitOptions::groups): the layers near the input and near the output get shallow
// nets, the middle a gated residual block.
//   auto:        from the trace: a layer's difficulty is 1 - the co-occurrence top-k precision of
//                its next layer on the training tokens; the input group is the longest run of
//                layers from the first whose difficulty is at most the mean, the output group the
//                longest such run ending at the second-to-last layer, the rest is the middle. When a
//                group would be empty or cover everything, the positional rule is used instead.
//   positional:  the first and last quarter (at least one layer each) are shallow.
//   shallow, gated: every layer the same.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "moe/predict/llapor_data.h"
#include "moe/predict/llapor_model.h"

namespace ferry::moe {

struct LlaporFitOptions {
  std::string mode = "auto";      // hidden, history, or auto (hidden when the trace has hidden states)
  int lookahead = 3;              // layers ahead predicted (D)
  int pca_dims = 32;              // hidden mode: PCA components kept (at most the hidden size)
  bool routing_features = true;   // hidden mode: add the token's gate weights at the layer
  int width = 128;                // hidden units per block
  int context_layers = 4;         // history mode: earlier layers of this token read (C)
  int previous_tokens = 2;        // history mode: previous tokens read (H)
  bool share_layers = false;      // one network per layer group instead of per layer (default in history mode)
  std::string groups = "auto";    // auto, positional, shallow or gated (see above)
  int epochs = 80;                // passes over each network's rows
  int batch = 128;                // rows per step
  double lr = 3e-3;               // Adam learning rate
  double weight_decay = 1e-4;     // Adam L2
  double dropout = 0.1;           // after every block
  int max_rows = 8000;            // training rows per network (random subset beyond)
  std::uint64_t seed = 1;         // init, shuffling, subsets
  std::vector<int> train_sequences;  // sequence ids (order of appearance); both empty: split by heldout
  std::vector<int> test_sequences;
  double heldout_fraction = 0.2;  // last sequences held out when no explicit split
};

struct LlaporSplit {
  std::vector<int> train, test;  // sequence ids
};
// The train / test split the options give for `t` (InvalidArgument when impossible).
LlaporSplit llapor_split(const PredictorTrace& t, const LlaporFitOptions& o);

// Fits on the split's training sequences. on_progress(done, total, message) after every epoch.
LlaporModel fit_llapor(const PredictorTrace& t, const LlaporFitOptions& o,
                       const std::function<void(int, int, const std::string&)>& on_progress = {});

// Layer groups the options choose on `t`'s training tokens: [layer] -> 0 input, 1 middle, 2 output
// (-1 for the last layer).
std::vector<int> llapor_groups(const PredictorTrace& t, const std::vector<int>& train, const LlaporFitOptions& o);

}  // namespace ferry::moe
