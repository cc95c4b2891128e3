#include "moe/predict/llapor_data.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry::moe {

std::vector<int> PredictorTrace::sequences() const {
  std::vector<int> out;
  for (const auto& t : trace.tokens)
    if (out.empty() || out.back() != t.sequence) out.push_back(t.sequence);
  return out;
}

PredictorTrace read_predictor_trace(const std::string& path, bool with_hidden) {
  PredictorTrace p;
  p.trace = read_routing_trace(path);
  const int L = p.trace.num_layers;
  p.row_of.assign(p.trace.tokens.size(), std::vector<std::int64_t>(L, -1));
  const std::string side = path + ".hidden.bin";
  if (!with_hidden || !std::filesystem::exists(side)) return p;

  std::ifstream in(side, std::ios::binary);
  if (!in) FERRY_THROW(IoError, "cannot open '", side, "'");
  char header[32];
  if (!in.read(header, 32)) FERRY_THROW(FormatError, "'", side, "': shorter than its 32-byte header");
  std::uint32_t version, hs, dtype;
  std::uint64_t rows;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&hs, header + 12, 4);
  std::memcpy(&dtype, header + 16, 4);
  std::memcpy(&rows, header + 24, 8);
  if (std::memcmp(header, "FERRYHID", 8) != 0) FERRY_THROW(FormatError, "'", side, "': bad magic (expected FERRYHID)");
  if (version != 1) FERRY_THROW(FormatError, "'", side, "': unsupported version ", version);
  if (dtype != 0) FERRY_THROW(FormatError, "'", side, "': unsupported dtype ", dtype, " (0 = float32)");
  if (hs == 0 || hs > (1u << 20)) FERRY_THROW(FormatError, "'", side, "': invalid hidden size ", hs);
  const std::uint64_t size = std::filesystem::file_size(side);
  // Compared by division: 32 + rows * hs * 4 wraps for a header's huge row count.
  const std::uint64_t row_bytes = std::uint64_t{hs} * sizeof(float);
  if (size < 32 || (size - 32) % row_bytes != 0 || (size - 32) / row_bytes != rows)
    FERRY_THROW(FormatError, "'", side, "': ", size, " bytes, but the header promises ", rows, " rows of ", hs,
                " floats (32 + ", rows, " x ", row_bytes, " bytes)");
  p.hidden_size = static_cast<int>(hs);
  p.hidden.resize(static_cast<std::size_t>(rows) * hs);
  if (!in.read(reinterpret_cast<char*>(p.hidden.data()), static_cast<std::streamsize>(p.hidden.size() * sizeof(float))))
    FERRY_THROW(IoError, "failed reading '", side, "'");

  // Map (sequence, position, layer) -> hidden_row from the JSONL (sequence numbering as the reader).
  std::ifstream js(path);
  std::map<std::string, int> seq_ids;
  std::map<std::tuple<int, int, int>, std::int64_t> rowmap;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(js, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": not valid JSON");
    }
    const std::string seq = (j.contains("dataset") ? j["dataset"].dump() : "") + "/" +
                            (j.contains("problem_id") ? j["problem_id"].dump() : "0");
    if (!seq_ids.count(seq)) {
      const int next = static_cast<int>(seq_ids.size());
      seq_ids[seq] = next;
    }
    if (!j.contains("hidden_row")) continue;
    if (!j["hidden_row"].is_number_integer() || j["hidden_row"].get<std::int64_t>() < 0 ||
        j["hidden_row"].get<std::uint64_t>() >= rows)
      FERRY_THROW(FormatError, "trace '", path, "' line ", lineno, ": hidden_row ", j["hidden_row"].dump(),
                  " outside the ", rows, " rows of '", side, "'");
    rowmap[{seq_ids[seq], j.value("token_idx", 0), j.value("layer", 0)}] = j["hidden_row"].get<std::int64_t>();
  }
  for (std::size_t i = 0; i < p.trace.tokens.size(); ++i) {
    const auto& t = p.trace.tokens[i];
    for (int l = 0; l < L; ++l) {
      auto it = rowmap.find({t.sequence, t.position, l});
      if (it != rowmap.end()) p.row_of[i][l] = it->second;
    }
  }
  return p;
}

}  // namespace ferry::moe
