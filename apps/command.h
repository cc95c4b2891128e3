// The `ferry` command is a table of subcommands; each lives in its own cmd_*.cc file and
// parses its own flags. Errors are thrown (ferry::InvalidArgument etc.) and turned into one
// line and exit code 2 by main.
#pragma once

#include <string>
#include <vector>

namespace ferry::apps {

// argv[0] is the subcommand's name ("train"), the rest its flags.
using CommandFn = int (*)(int argc, char** argv);

struct Command {
  const char* name;     // the word after `ferry`
  const char* summary;  // one line for `ferry --help`
  CommandFn run;
};

// All subcommands, in the order `ferry --help` lists them (commands.cc).
const std::vector<Command>& commands();

// Path of the running ferry executable (for re-launching under mpirun).
std::string self_executable();

}  // namespace ferry::apps
