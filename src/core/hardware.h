// The one table of hardware figures: host-to-device links, GPUs and host CPUs, one value per
// quantity, each with its source. Every place that needs such a number reads it here: the MoE
// links (moe/store/link.cc: pcie3, pcie4, pcie5, mixtral-a100), the engine's compute profile
// (moe/engine: a100), the simulator's profiles (moe/sim/profiles.json names the entries) and the
// training cost model's devices (advise/device_profile.cc). It lives in core because advise
// must not depend on moe.
//
// A GPU's figures are datasheet peaks; a link's bandwidth is the achieved pinned host-to-device
// copy rate, not the raw lane rate; a host's are sustained rates assumed for its socket. A figure
// no part of ferry reads for that device is 0.
#pragma once

#include <array>
#include <string_view>

namespace ferry::hardware {

struct HostLink {
  std::string_view name;         // "pcie4": --link's shorthand, profiles.json's "link"
  std::string_view summary;      // one line for help texts
  double bandwidth_bytes_per_s;  // achieved pinned host -> device copy rate
  double latency_s;              // fixed cost per transfer
  std::string_view source;
};

struct Gpu {
  std::string_view name;       // "a100-40gb": profiles.json's "gpu"
  std::string_view summary;
  double memory_bytes;         // device memory
  double hbm_bytes_per_s;      // device memory bandwidth, peak
  double tensor_flops;         // dense bf16/fp16 tensor-core peak (FLOP/s)
  double fp32_flops;           // fp32 peak without tensor cores (FLOP/s)
  std::string_view host_link;  // the HostLink that attaches it to its host
  std::string_view source;
};

struct HostCpu {
  std::string_view name;         // "xeon-platinum-8380": profiles.json's "host"
  std::string_view summary;
  double memory_bytes_per_s;     // streamed by an expert kernel on one socket (sustained)
  double flops;                  // sustained fp32 FLOP/s of one socket
  std::string_view source;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// PCIe x16 achieves about 79 % of its raw rate host -> device with pinned memory (PCIe 3.0:
// 12 of 15.75 GB/s; PCIe 4.0: 25 of 31.5). The 10 us per transfer is the order of a copy's
// launch and completion on a CUDA stream, assumed for every generation.
inline constexpr std::array<HostLink, 3> kHostLinks = {{
    {"pcie3", "PCIe 3.0 x16", 12e9, 10e-6,
     "PCI-SIG PCIe 3.0: 8 GT/s x16 = 15.75 GB/s raw; CUDA bandwidthTest pinned H2D typically 11-13 GB/s"},
    {"pcie4", "PCIe 4.0 x16", 25e9, 10e-6,
     "PCI-SIG PCIe 4.0: 16 GT/s x16 = 31.5 GB/s raw; pinned H2D measured 24-26 GB/s on servers (21-25 on "
     "desktops)"},
    {"pcie5", "PCIe 5.0 x16", 50e9, 10e-6,
     "PCI-SIG PCIe 5.0: 32 GT/s x16 = 63 GB/s raw; 50 GB/s assumed (the same share of raw as PCIe 4.0)"},
}};

inline constexpr std::array<Gpu, 7> kGpus = {{
    {"k80", "NVIDIA Tesla K80, one GK210 die", 0, 0, 0, 4.37e12, "pcie3",
     "NVIDIA K80 datasheet: 8.73 TFLOP/s fp32 peak with boost per board of two GK210 (4.37 per die)"},
    {"p100-pcie-16gb", "NVIDIA Tesla P100 PCIe 16GB", 0, 0, 0, 9.3e12, "pcie3",
     "NVIDIA P100 datasheet: 9.3 TFLOP/s fp32 peak (PCIe)"},
    {"titan-xp", "NVIDIA Titan Xp", 0, 0, 0, 12.1e12, "pcie3", "NVIDIA Titan Xp specifications: 12.1 TFLOP/s fp32 peak"},
    {"v100-sxm2-16gb", "NVIDIA Tesla V100 SXM2 16GB", 0, 0, 0, 15.7e12, "pcie3",
     "NVIDIA V100 datasheet: 15.7 TFLOP/s fp32 peak (SXM2)"},
    {"v100-pcie-32gb", "NVIDIA Tesla V100 PCIe 32GB", 32 * kGiB, 900e9, 112e12, 0, "pcie3",
     "NVIDIA Tesla V100 datasheet (V100 PCIe: 900 GB/s HBM2, 112 TFLOPS tensor, 32 GB)"},
    // The 40 GB A100 in PCIe and SXM4 form has the same memory and compute peaks.
    {"a100-40gb", "NVIDIA A100 40GB", 40 * kGiB, 1555e9, 312e12, 19.5e12, "pcie4",
     "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB: 1,555 GB/s HBM2, 312 TFLOPS BF16 dense, 19.5 TFLOPS "
     "fp32)"},
    {"rtx4090", "NVIDIA GeForce RTX 4090 24GB", 24 * kGiB, 1008e9, 165.2e12, 0, "pcie4",
     "NVIDIA Ada Lovelace architecture whitepaper (RTX 4090: 24 GB GDDR6X at 1,008 GB/s, 165.2 TFLOPS FP16 "
     "tensor with FP32 accumulate, dense)"},
}};

inline constexpr std::array<HostCpu, 3> kHostCpus = {{
    {"xeon-gold-6148", "2-socket Xeon Gold 6148 server", 100e9, 1.0e12,
     "Intel Xeon Gold 6148: 6 channels DDR4-2666 = 128 GB/s per socket, 20 cores AVX-512 (about 3 TFLOPS fp32 "
     "peak); 100 GB/s streamed and 1 TFLOPS sustained assumed"},
    {"xeon-platinum-8380", "2-socket Xeon Platinum 8380 server", 150e9, 1.5e12,
     "Intel Xeon Platinum 8380: 8 channels DDR4-3200 = 204.8 GB/s per socket, 40 cores AVX-512; 150 GB/s "
     "streamed and 1.5 TFLOPS sustained assumed"},
    {"ryzen-9-7950x", "desktop Ryzen 9 7950X, dual-channel DDR5", 60e9, 0.8e12,
     "AMD Ryzen 9 7950X: DDR5-5200 dual channel = 83.2 GB/s peak, 16 cores AVX-512; 60 GB/s streamed and 0.8 "
     "TFLOPS sustained assumed"},
}};

template <typename T, std::size_t N>
constexpr const T* find_in(const std::array<T, N>& table, std::string_view name) {
  for (const T& entry : table)
    if (entry.name == name) return &entry;
  return nullptr;
}

// nullptr for an unknown name.
constexpr const HostLink* find_host_link(std::string_view name) { return find_in(kHostLinks, name); }
constexpr const Gpu* find_gpu(std::string_view name) { return find_in(kGpus, name); }
constexpr const HostCpu* find_host_cpu(std::string_view name) { return find_in(kHostCpus, name); }

// The deployment the MoE engine's emulation is scaled to (docs/moe.md, "The link ratio"):
// Mixtral-8x7B on an A100-40GB over PCIe 4.0, host experts on a Xeon Platinum 8380. A batch-1
// expert call is memory-bound, so each time is the expert's bytes over a bandwidth and the
// expert's size cancels from the ratios; rounded to whole ratios, as the docs quote them.
constexpr double round_ratio(double x) { return static_cast<double>(static_cast<long long>(x + 0.5)); }
// One expert's transfer time over its device compute time: 1555 / 25 = 62.2 -> 62.
inline constexpr double kA100TransferRatio =
    round_ratio(find_gpu("a100-40gb")->hbm_bytes_per_s / find_host_link("pcie4")->bandwidth_bytes_per_s);
// One token's host expert time over the device expert time: 1555 / 150 = 10.4 -> 10.
inline constexpr double kA100HostRatio =
    round_ratio(find_gpu("a100-40gb")->hbm_bytes_per_s / find_host_cpu("xeon-platinum-8380")->memory_bytes_per_s);

}  // namespace ferry::hardware
