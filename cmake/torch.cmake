# Finds libtorch: Debian's libtorch-dev (CPU) by default, or the one of a PyTorch install given
# with -DTorch_DIR=... (a CUDA build). Adds the target ferry::torch.
find_package(Torch REQUIRED)
add_library(ferry_torch INTERFACE)
target_link_libraries(ferry_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(ferry_torch INTERFACE ${TORCH_INCLUDE_DIRS})
# Used through this target instead of TORCH_CXX_FLAGS, so that non-torch modules build without
# libtorch's include paths and compile fast.
add_library(ferry::torch ALIAS ferry_torch)
# at::parallel_for is a header template whose body is `#pragma omp parallel` when libtorch uses
# OpenMP (AT_PARALLEL_OPENMP): a file that calls it runs serially unless it is compiled with
# OpenMP too (measured: the expert kernels took the same time on 1 and 2 threads).
find_package(OpenMP REQUIRED COMPONENTS CXX)
target_link_libraries(ferry_torch INTERFACE OpenMP::OpenMP_CXX)
set(FERRY_TORCH_HAS_CUDA OFF)
if(TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
  set(FERRY_TORCH_HAS_CUDA ON)
endif()
message(STATUS "ferry: libtorch ${Torch_VERSION} (CUDA: ${FERRY_TORCH_HAS_CUDA})")

