#include "apps/train_flags.h"

#include <type_traits>

#include "apps/cli.h"
#include "apps/link_flag.h"
#include "comm/link/link_options.h"

namespace ferry::apps {

void add_algo_shorthand_flags(CLI::App& app, std::vector<train::SpecShorthand>& shorthands) {
  struct Flag {
    const char* flag;
    const char* key;
    const char* help;
  };
  static constexpr Flag kFlags[] = {
      {"--warmup-steps", "warmup_steps", "odsgd/ssdsgd/cdsgd: S-SGD iterations before delaying (ALGO:warmup_steps=W; default 20)"},
      {"--lr-local", "lr_local", "odsgd/ssdsgd/cdsgd: local learning rate, 0: --lr (ALGO:lr_local=LR; default 0)"},
      {"--lr-warmup-steps", "lr_warmup_steps", "odsgd/ssdsgd/cdsgd: ramp the local lr over N steps (ALGO:lr_warmup_steps=N; default 0)"},
      {"--delay-steps", "delay_steps", "ssdsgd: pull the global weights every k iterations (ssdsgd:delay_steps=k; default 4)"},
      {"--local-update", "local_update", "ssdsgd: glu | sgd (ssdsgd:local_update=glu; default glu)"},
      {"--glu-coef", "glu_coef", "ssdsgd: weight of the global update direction (ssdsgd:glu_coef=c; default 0.5)"},
      {"--correction-steps", "correction_steps", "cdsgd: full-precision push every k iterations (cdsgd:correction_steps=k; default 5)"},
      {"--threshold", "threshold", "cdsgd: twobit threshold when no --codec is given (cdsgd:threshold=T; default 0.005)"},
      {"--sync-every", "sync_every", "localsgd: average the models every H iterations (localsgd:sync_every=H; default 4)"},
      {"--post-local", "post_local", "localsgd: S-SGD for the first K iterations (localsgd:post_local=K; default 0)"},
      {"--warm-start-steps", "warm_start_steps", "diloco/streaming-diloco: S-SGD for the first N iterations, then DiLoCo from its weights (ALGO:warm_start_steps=N; default 0)"},
      {"--bucket-mb", "bucket_mb", "wfbp: fusion bucket size in MB (wfbp:bucket_mb=M; default 4)"},
  };
  shorthands.clear();
  shorthands.reserve(std::size(kFlags));  // the options below hold pointers into it
  for (const Flag& f : kFlags) {
    shorthands.push_back({f.flag, f.key, ""});
    app.add_option(f.flag, shorthands.back().value, f.help);
  }
}

TrainFlags::TrainFlags(CLI::App& app, train::TrainOptions& o, train::OptionPlace place) : app_(app), options_(o) {
  train::register_builtin_strategies();  // before --algo's help lists them
  for (const train::OptionField& f : train::train_option_fields()) {
    if (!f.in(place)) continue;
    const std::string help = f.choices ? std::string(f.help) + " " + choices(f.choices()) : f.help;
    if (f.parse) {
      pending_.push_back({&f, ""});
      app.add_option(f.flag, pending_.back().text, help);
      continue;
    }
    train::with_field(f, o, [&](auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, comm::LinkOptions>) {
        pending_.push_back({&f, comm::describe(v)});
        app.add_option(f.flag, pending_.back().text, link_flag_help());
      } else if constexpr (std::is_same_v<V, bool>) {
        if (f.form == train::FlagForm::kNegatedSwitch) {
          pending_.push_back({&f, ""});
          app.add_flag(f.flag, pending_.back().set, help);
        } else {
          app.add_flag(f.flag, v, help);
        }
      } else {
        CLI::Option* option = app.add_option(f.flag, v, help);
        if (f.form == train::FlagForm::kOptionalValue) option->expected(0, 1);
        if (f.shown_default) option->default_str(f.shown_default);
      }
    });
  }
  add_algo_shorthand_flags(app, shorthands_);
}

void TrainFlags::apply() {
  for (const Pending& p : pending_) {
    if (app_.count(p.field->flag) == 0) continue;
    if (p.field->parse) {
      p.field->parse(p.text, options_);
      continue;
    }
    train::with_field(*p.field, options_, [&](auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, comm::LinkOptions>)
        v = comm::parse_link_spec(p.text);
      else if constexpr (std::is_same_v<V, bool>)
        v = !p.set;  // a negated switch, given
    });
  }
  options_.algo = train::fold_shorthands(options_.algo, shorthands_);
}

}  // namespace ferry::apps
