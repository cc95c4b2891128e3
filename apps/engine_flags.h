// The offloading engine's flags, declared once for every `ferry moe` subcommand that opens an
// engine from the command line (generate, logits, serve; bench sweeps them): the same names and
// help texts everywhere, each subcommand keeping its own defaults, and one check of their values.
#pragma once

namespace CLI { class App; }
namespace ferry::moe {
struct EngineOptions;
struct BenchOptions;
}  // namespace ferry::moe

namespace ferry::apps {

// Adds --policy, --device-mem, --link, --compute and --weights to `app`, bound to o.policy,
// o.device_mem, o.link, o.compute and o.weights; their values now are the defaults --help shows. Sets `app`'s callback,
// which checks them (check_engine_flags) once parsing succeeded. `o` must outlive the parse.
void add_engine_flags(CLI::App& app, moe::EngineOptions& o);

// The same flags for a sweep (`ferry moe bench`): --policies and --device-mem take
// comma-separated lists, one run each; --link, --compute and --weights as above. Sets `app`'s callback, which
// checks every value (check_engine_sweep_flags). `o` must outlive the parse.
void add_engine_sweep_flags(CLI::App& app, moe::BenchOptions& o);

// --weights alone (commands that open an engine of their own settings, e.g. `ferry moe trace`),
// checked by parse_weight_format once parsing succeeded.
void add_weights_flag(CLI::App& app, std::string& weights);

// What can be checked before a model loads: the policy spec (and that it does not need the
// recorded future, which only the simulator has), the budget's form, the link and the compute
// profile. Throws InvalidArgument naming the flag; the budget against the model's experts is
// checked when the engine opens.
void check_engine_flags(const moe::EngineOptions& o);
void check_engine_sweep_flags(const moe::BenchOptions& o);

}  // namespace ferry::apps
