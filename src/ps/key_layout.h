// How a model's tensors map to parameter-server keys. The model is viewed as one flat float
// vector (tensors back to back); it is cut into `num_servers` contiguous ranges of equal size,
// and every (tensor ∩ range) piece is one key. Servers are therefore balanced to within one
// element by bytes, and a large tensor is split across servers (as BytePS partitions do).
#pragma once

#include <cstddef>
#include <vector>

namespace ferry::ps {

struct KeyRange {
  int key = 0;             // dense id, 0..num_keys-1, in flat order
  int server = 0;          // index of the owning server, 0..num_servers-1
  int tensor = 0;          // index of the model tensor the piece belongs to
  std::size_t offset = 0;  // first element in the flat model vector
  std::size_t length = 0;  // elements
};

class KeyLayout {
 public:
  // tensor_numels: element count of each tensor in model order; also splits any tensor longer
  // than max_key_elements (0 = no limit) into several keys.
  KeyLayout(const std::vector<std::size_t>& tensor_numels, int num_servers, std::size_t max_key_elements = 0);

  const std::vector<KeyRange>& keys() const { return keys_; }
  const KeyRange& key(int k) const { return keys_.at(k); }
  int num_servers() const { return num_servers_; }
  std::size_t total_elements() const { return total_; }
  // Keys owned by server s, in flat order.
  std::vector<int> keys_of_server(int s) const;
  // Elements owned by server s.
  std::size_t elements_of_server(int s) const;

 private:
  std::vector<KeyRange> keys_;
  int num_servers_;
  std::size_t total_ = 0;
};

}  // namespace ferry::ps
