// Checks of the paths a command reads and writes, before anything is opened: what a path that is
// not a regular file is (a FIFO would block open(2), /dev/zero never ends), and that an output does
// not name one of the command's inputs (writing it would destroy the input it is made from).
#pragma once

#include <string>
#include <vector>

namespace ferry {

// What is at `path`, following symlinks: "a regular file", "a directory", "a FIFO", "a socket",
// "a character device", "a block device", or "" when nothing is there (or it cannot be stat'ed).
std::string file_kind(const std::string& path);

// IoError "WHAT 'PATH' does not exist" or "WHAT 'PATH' is not a regular file (a FIFO)" unless
// `path` is a regular file; stat(2) only, so a FIFO is never opened.
void require_regular_file(const std::string& path, const std::string& what);

// InvalidArgument unless `program` (a path when it holds a '/', else a name looked up in $PATH as
// execvp does) is an executable regular file: "WHAT 'foo' was not found in PATH", "... does not
// exist", "... is not a regular file (a directory)", "... is not executable". A launcher checks
// before starting mpirun, whose own answer is a banner per rank and an exit code of its choice.
void require_program(const std::string& program, const std::string& what);

// The files a command reads from input path `path`: the file itself, or for a directory (a
// checkpoint) every regular file directly inside it. Empty when nothing is there.
std::vector<std::string> input_files(const std::string& path);

// InvalidArgument "OUT_FLAG 'OUT' is the input file 'IN' (IN_FLAG): writing it would destroy the
// input; choose another path" when `out` names the same file as one of `inputs` (input_files of
// the command's inputs): the same device and inode when it exists (through symlinks and hard
// links), else the same weakly canonical path. Checked before anything is written.
void require_output_not_input(const std::string& out, const std::string& out_flag,
                              const std::vector<std::string>& inputs, const std::string& in_flag);

}  // namespace ferry
