// The optimizer a worker steps, chosen by the --optimizer spec (core/spec.h):
//
//   sgd                                  SGD with momentum and weight decay, MXNet's update
//                                        (ps/sgd_optimizer.h): --lr, --momentum, --wd
//   adamw[:beta1=B1,beta2=B2,eps=E]      AdamW as torch computes it (adamw_optimizer.h): --lr, --wd
//                                        (decoupled); --momentum is not used
//
// A run that names no optimizer gets its algorithm's (StrategyInfo::default_optimizer: AdamW for
// DiLoCo, SGD for the others), and a run that gives no --lr or --wd gets the optimizer's own
// values below. AdamW's are the DiLoCo paper's inner optimizer (Douillard et al. 2023, arXiv
// 2311.08105, Table 5: lr 4e-4, weight decay 0.1); the paper does not state the betas, and
// β2 = 0.95 is Chinchilla's (Hoffmann et al. 2022), whose training recipe the paper's models follow.
#pragma once

#include <string>

namespace ferry::train {

enum class OptimizerKind { kSgd, kAdamW };

struct OptimizerChoice {
  OptimizerKind kind = OptimizerKind::kSgd;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;  // adamw

  // Reads an --optimizer spec; InvalidArgument naming --optimizer and the key for a bad one.
  static OptimizerChoice of_spec(const std::string& spec);
  // The --lr and --wd a run gets when it gives none: 0.05 and 0 for sgd (ferry's defaults),
  // 4e-4 and 0.1 for adamw (the DiLoCo paper's).
  float default_lr() const;
  float default_weight_decay() const;
};

// The spec with every key resolved ("adamw" -> "adamw:beta1=0.9,beta2=0.95,eps=1e-08");
// InvalidArgument naming --optimizer.
std::string canonical_optimizer(const std::string& spec);

}  // namespace ferry::train
