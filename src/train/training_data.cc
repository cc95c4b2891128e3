#include "train/training_data.h"

#include <ATen/core/Tensor.h>

#include "core/error.h"
#include "train/data/dataset_source.h"
#include "train/data/text_dataset.h"

namespace ferry::train {

ModelOptions model_options(const TrainOptions& o) {
  ModelOptions m;
  if (model_input(o.model) == ModelInput::kImages) {
    const ItemShape s = image_item_shape(o.data_dir);
    m.in_channels = s.channels;
    m.height = s.height;
    m.width = s.width;
  }
  return m;
}

Dataset load_training_data(const TrainOptions& o, Split split) {
  const std::int64_t limit = split == Split::kTrain ? o.train_limit : o.test_limit;
  if (model_input(o.model) == ModelInput::kTokens) {
    TextDataOptions t;
    t.path = o.data_dir;
    t.split = split;
    t.context = model_options(o).context;
    t.limit = limit;
    return load_text(t);
  }
  DatasetSourceOptions d;
  d.source = o.data_dir;
  d.split = split;
  d.limit = limit;
  return load_dataset(d);
}

void check_training_data(const Dataset& train, const Dataset& test, const TrainOptions& o) {
  const ModelOptions model = model_options(o);
  const bool tokens = model_input(o.model) == ModelInput::kTokens;
  for (const Dataset* d : {&train, &test}) {
    if (!d->images.defined()) continue;
    const auto s = d->images.sizes();
    if (tokens) {
      FERRY_REQUIRE(s.size() == 2 && s[1] <= model.context && d->images.scalar_type() == at::kLong, "data set '",
                    d->name, "' does not hold token windows of at most ", model.context, " tokens; --model ", o.model,
                    " reads token ids");
      FERRY_REQUIRE(d->num_classes <= model.vocab, "data set '", d->name, "' has ", d->num_classes,
                    " token values; --model ", o.model, " has a vocabulary of ", model.vocab);
      continue;
    }
    FERRY_REQUIRE(s.size() == 4 && s[1] == model.in_channels && s[2] == model.height && s[3] == model.width,
                  "data set '", d->name, "' holds images of ", s.size() == 4 ? s[1] : 0, " x ",
                  s.size() == 4 ? s[2] : 0, " x ", s.size() == 4 ? s[3] : 0, " (channels x height x width); --model ",
                  o.model, " is built for ", model.in_channels, " x ", model.height, " x ", model.width);
    FERRY_REQUIRE(d->num_classes <= model.num_classes, "data set '", d->name, "' has ", d->num_classes,
                  " classes; --model ", o.model, " has ", model.num_classes, " outputs");
  }
  const std::int64_t global = o.batch * static_cast<std::int64_t>(o.num_workers);
  FERRY_REQUIRE(train.size() >= global, "data set '", train.name, "' holds ", train.size(),
                " training items, fewer than one global batch (--batch ", o.batch, " x --np ", o.num_workers, " = ",
                global, "): lower --batch or --np, or raise --train-limit");
}

}  // namespace ferry::train
