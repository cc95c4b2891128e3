// What every subcommand shares on its command line: options that show their defaults in --help,
// help printed (not swallowed) when asked for, and lists of choices taken from the registries.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ferry::apps {

// Call first on a command's CLI::App: every option added afterwards, subcommands' included,
// prints its default value in --help.
void init_app(CLI::App& app);

// app.parse(argc, argv). On --help it prints the help of the command, or of the subcommand that
// was given, to stdout and rethrows, so that main() exits 0; errors propagate to main().
void parse_command_line(CLI::App& app, int argc, char** argv);

// "a | b | c": a help text's list of choices, from a registry's names.
std::string choices(const std::vector<std::string>& names);

// "a,b,,c" -> a | b | c: a comma-separated flag value, empty items dropped.
std::vector<std::string> split_list(const std::string& s);

// Validators that name what they expect (CLI11 prefixes the flag): a finite number >= lo (NaN
// and Inf are refused, unlike CLI::NonNegativeNumber, which lets NaN through), and a thread
// count from 1 to 4x this machine's cores (more only slows a run down and looks like a hang).
CLI::Validator finite_at_least(double lo);
CLI::Validator thread_count();

}  // namespace ferry::apps
