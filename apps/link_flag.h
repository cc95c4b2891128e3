// Training's --link (the emulated NIC of every rank), declared once for `ferry train`, `ferry run`
// and `ferry compare`: one name and one help text, made from the link registry (comm/link).
#pragma once

#include <string>

namespace CLI { class App; }

namespace ferry::apps {

// Adds --link to `app`, bound to `link`, whose value now is the default --help shows. The value is
// parsed by comm::parse_link_spec where the command uses it.
void add_link_flag(CLI::App& app, std::string& link);
// Its help text (also `ferry train`'s, whose --link comes from the option table).
std::string link_flag_help();

}  // namespace ferry::apps
