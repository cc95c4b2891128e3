// Scores a predictor on a recorded trace through the Predictor interface, replaying the run-time
// protocol: per sequence reset_sequence(); per token and layer l: observe(l, experts, weights),
// then predict(l, hidden state when recorded, lookahead D). The k most probable experts of layer
// l+1+d are compared with the experts the token actually used there (past the last layer: the next
// token of the same sequence, scored only where the predictor returned that row):
//   precision@k = hits / k,  recall@k = hits / |actual|   (equal when k = top_k).
// A missing prediction (a row the predictor did not return) counts as no hit.
#pragma once

#include <string>
#include <vector>

#include "moe/predict/llapor_data.h"
#include "moe/predict/predictor.h"

namespace ferry::moe {

struct PredictorScore {
  std::string predictor;
  int num_layers = 0;
  int lookahead = 0;
  int k = 0;
  std::vector<double> hits, predicted, actual;  // [source layer x lookahead]
  double predict_seconds = 0;                   // time inside observe() + predict()
  std::uint64_t tokens = 0;

  double precision(int layer, int d) const;
  double recall(int layer, int d) const;
  // Pooled over source layers.
  double precision(int d) const;
  double recall(int d) const;
  double us_per_token() const { return tokens ? 1e6 * predict_seconds / tokens : 0; }
};

// `sequences`: the sequence ids to score (empty = all); k = 0 means the trace's top-k.
PredictorScore evaluate_predictor(Predictor& p, const PredictorTrace& t, const std::vector<int>& sequences,
                                  int lookahead, int k = 0);

}  // namespace ferry::moe
