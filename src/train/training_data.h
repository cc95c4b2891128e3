// The data a training run reads, chosen by what its model reads (model_input): images from
// --data (Fashion-MNIST by default, an IDX or CIFAR-10 folder, or "synthetic"), or text for token
// models (the Python standard library's sources by default, a file or folder otherwise).
#pragma once

#include "train/data/dataset.h"
#include "train/models/model.h"
#include "train/train_options.h"

namespace ferry::train {

// The shape the run's model is built for, known without loading the data (servers build the
// model to size their shards): CIFAR-10 folders give 3 x 32 x 32, other image sources 1 x 28 x 28.
ModelOptions model_options(const TrainOptions& options);

// The training or test split, cut to --train-limit / --test-limit. Throws like the loaders.
Dataset load_training_data(const TrainOptions& options, Split split);

// Throws InvalidArgument when a data set does not fit the model (item shape, classes or
// vocabulary) or the training set holds less than one global batch.
void check_training_data(const Dataset& train, const Dataset& test, const TrainOptions& options);

}  // namespace ferry::train
