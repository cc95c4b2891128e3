// Finding files of the source tree or of ../shared at run time, wherever ferry is started from.
#pragma once

#include <string>

namespace ferry {

// The first of  $FERRY_SOURCE_DIR/relative, ./relative, ../relative, ../../relative, ... (up to
// the file system root) that exists as a regular file (`directory` false) or a directory
// (`directory` true), made canonical; "" when there is none.
std::string find_upward(const std::string& relative, bool directory);

}  // namespace ferry
