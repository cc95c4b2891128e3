#include "ps/key_layout.h"

#include <algorithm>

#include "core/error.h"

namespace ferry::ps {

KeyLayout::KeyLayout(const std::vector<std::size_t>& tensor_numels, int num_servers, std::size_t max_key_elements)
    : num_servers_(num_servers) {
  FERRY_REQUIRE(num_servers >= 1, "need at least one server, got ", num_servers);
  for (auto n : tensor_numels) total_ += n;
  // Server s owns flat range [bound(s), bound(s+1)).
  auto bound = [&](int s) { return total_ * static_cast<std::size_t>(s) / num_servers; };
  std::size_t offset = 0;
  for (std::size_t t = 0; t < tensor_numels.size(); ++t) {
    std::size_t end = offset + tensor_numels[t];
    std::size_t pos = offset;
    while (pos < end) {
      int server = 0;
      while (server + 1 < num_servers && bound(server + 1) <= pos) ++server;
      std::size_t piece_end = std::min(end, bound(server + 1));
      if (max_key_elements) piece_end = std::min(piece_end, pos + max_key_elements);
      keys_.push_back(KeyRange{static_cast<int>(keys_.size()), server, static_cast<int>(t), pos, piece_end - pos});
      pos = piece_end;
    }
    offset = end;
  }
}

std::vector<int> KeyLayout::keys_of_server(int s) const {
  std::vector<int> out;
  for (const auto& k : keys_)
    if (k.server == s) out.push_back(k.key);
  return out;
}

std::size_t KeyLayout::elements_of_server(int s) const {
  std::size_t n = 0;
  for (const auto& k : keys_)
    if (k.server == s) n += k.length;
  return n;
}

}  // namespace ferry::ps
