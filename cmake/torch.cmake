# Finds libtorch: Debian's libtorch-dev (CPU) by default, or the one of a PyTorch install given
# with -DTorch_DIR=... (a CUDA build). Adds the target ferry::torch.
find_package(Torch REQUIRED)
add_library(ferry_torch INTERFACE)
target_link_libraries(ferry_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(ferry_torch INTERFACE ${TORCH_INCLUDE_DIRS})
# Debian's TorchConfig adds flags we do not want globally; keep only what is needed.
add_library(ferry::torch ALIAS ferry_torch)
set(FERRY_TORCH_HAS_CUDA OFF)
if(TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
  set(FERRY_TORCH_HAS_CUDA ON)
endif()
message(STATUS "ferry: libtorch ${Torch_VERSION} (CUDA: ${FERRY_TORCH_HAS_CUDA})")

# libprotobuf must be initialised before libsentencepiece registers its descriptors (libtorch and
# the MoE tokenizer both bring it in); an executable that names it first in its link line makes
# the loader initialise it first. Link ferry::protobuf_first before anything else.
add_library(ferry_protobuf_first INTERFACE)
find_library(FERRY_PROTOBUF_LIBRARY NAMES protobuf)
if(FERRY_PROTOBUF_LIBRARY)
  target_link_libraries(ferry_protobuf_first INTERFACE -Wl,--no-as-needed ${FERRY_PROTOBUF_LIBRARY} -Wl,--as-needed)
endif()
add_library(ferry::protobuf_first ALIAS ferry_protobuf_first)
