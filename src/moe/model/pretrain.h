// `ferry moe pretrain`: trains a small Mixtral-architecture model with libtorch on text (byte
// tokens), so that its routers are learned rather than random. Loss: next-token cross entropy plus
// the Switch-Transformer load-balancing term  coef * E * sum_e f_e * P_e  per layer (f_e: share of
// routed slots, P_e: mean router probability), AdamW with warm-up and cosine decay.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "moe/model/config.h"
#include "moe/model/dtype.h"

namespace ferry::moe {

// The default shape of the pretrained tiny model: 4 layers, 8 experts (top-2), width 128.
MoeConfig pretrain_default_config();

struct PretrainOptions {
  std::string corpus;                   // text file or folder (*.py); "" = the Python standard library
  std::string out_dir;                  // checkpoint written here (config.json + model.safetensors)
  MoeConfig config = pretrain_default_config();  // model shape (vocabulary must be 256: byte tokens)
  int steps = 1000;                     // optimizer steps (fewer if max_minutes runs out)
  int batch = 8;                        // sequences per step
  int seq_len = 128;                    // tokens per sequence
  double lr = 3e-3;                     // peak learning rate
  int warmup_steps = 40;                // linear warm-up
  double aux_loss_coef = 0.01;          // load-balancing loss weight
  double max_minutes = 15;              // wall-clock cap for the training loop (the LR schedule follows
                                        // whichever of steps and time runs out first)
  std::uint64_t corpus_bytes = 6u << 20;  // text read from the corpus
  double heldout_fraction = 0.05;       // tail of the text kept for evaluation
  int eval_batches = 8;                 // held-out batches for the perplexity
  std::uint64_t seed = 1;               // init and batch sampling
  DType dtype = DType::kF32;            // checkpoint element type
};

struct PretrainReport {
  int steps_done = 0;
  double seconds = 0;
  double final_train_loss = 0;   // mean of the last 20 steps
  double heldout_ppl = 0;        // per byte, trained model
  double random_heldout_ppl = 0; // per byte, the same model at initialisation
  std::uint64_t train_bytes = 0, heldout_bytes = 0;
};

// Trains, writes the checkpoint to out_dir and the random initial weights to out_dir/random-init.
// on_step(step, total, loss) is called after every step.
PretrainReport pretrain(const PretrainOptions& options, const std::function<void(int, int, double)>& on_step = {});

}  // namespace ferry::moe
