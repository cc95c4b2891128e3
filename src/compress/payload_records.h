// Several codec payloads in one message, so that one allgather carries a whole step's (or a DDP
// bucket's) tensors: a sequence of records (u64 length in host byte order, then that many payload
// bytes), one per tensor, in tensor order. Written by the bucket exchange of `ferry train`'s
// allreduce codecs and of the DDP hook (train/bucket_exchange.h); read back bounds-checked, so a
// truncated or inconsistent message is a FormatError naming the message, the record and the
// sizes, never a read past its end.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace ferry::compress {

// Appends one record holding `payload` to `message`.
void append_record(std::vector<std::byte>& message, std::span<const std::byte> payload);

// The records of `payloads`, in order, as one message.
std::vector<std::byte> pack_records(std::span<const std::span<const std::byte>> payloads);

// The `count` payloads of `message`, as views into it. FormatError naming `what` (e.g.
// "allgathered gradients of rank 2") when a length header or a record runs past the end of the
// message, or bytes remain after the last record.
std::vector<std::span<const std::byte>> unpack_records(std::span<const std::byte> message, std::size_t count,
                                                       std::string_view what);

}  // namespace ferry::compress
