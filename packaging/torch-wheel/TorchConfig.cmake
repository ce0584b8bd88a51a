# SPDX-License-Identifier: MIT
# The Torch CMake package for the libtorch inside PyPI's torch wheel, as packaging/install-deps.sh --torch wheel installs
# it (NNSCOPE_TORCH_SITE/torch, NNSCOPE_TORCH_SITE being NNSCOPE_TORCH_PREFIX/site-packages unless set; a Python's own
# site-packages with torch 2.x works too: bench/gpu_check.sh uses the GPU machine's). CMakeLists.txt finds this file instead of the wheel's own
# share/cmake/Torch/TorchConfig.cmake, which insists on a CUDA toolkit ("Your installed Caffe2 version uses CUDA but I
# cannot find the CUDA libraries") even to build for the CPU: here the CPU build links libtorch_cpu and libc10 only,
# and NNSCOPE_CUDA adds libtorch_cuda and libc10_cuda, found beside them (no toolkit, no nvcc: nnscope compiles no
# CUDA code). Sets what the stock config sets: Torch_FOUND, TORCH_INSTALL_PREFIX, TORCH_INCLUDE_DIRS, TORCH_LIBRARIES
# (the imported target `torch`), TORCH_CXX_FLAGS, and Torch_VERSION from the headers.
set(_nnscope_torch "${NNSCOPE_TORCH_SITE}/torch")
if(NOT EXISTS "${_nnscope_torch}/lib/libtorch_cpu.so" OR NOT EXISTS "${_nnscope_torch}/include/torch/csrc/api/include/torch/torch.h")
  message(FATAL_ERROR "NNSCOPE_TORCH=wheel: no torch wheel in ${NNSCOPE_TORCH_SITE} (looked for ${_nnscope_torch}/lib/libtorch_cpu.so "
                      "and its headers). Install it with packaging/install-deps.sh --torch wheel (add --cuda for a GPU), or point "
                      "-DNNSCOPE_TORCH_PREFIX at the folder it filled (-DNNSCOPE_TORCH_SITE at a site-packages holding torch/).")
endif()
set(TORCH_INSTALL_PREFIX "${_nnscope_torch}")
set(TORCH_INCLUDE_DIRS "${_nnscope_torch}/include" "${_nnscope_torch}/include/torch/csrc/api/include")
# The wheels since torch 2.7 are built with the C++11 string ABI, as Debian's libstdc++ and Qt are.
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")

set(_nnscope_torch_libs "${_nnscope_torch}/lib/libtorch_cpu.so" "${_nnscope_torch}/lib/libc10.so")
if(NNSCOPE_CUDA)
  foreach(_lib libtorch_cuda.so libc10_cuda.so)
    if(NOT EXISTS "${_nnscope_torch}/lib/${_lib}")
      message(FATAL_ERROR "NNSCOPE_CUDA=ON: ${_nnscope_torch}/lib/${_lib} is missing; this wheel has no CUDA.")
    endif()
  endforeach()
  file(GLOB _nnscope_cublas "${NNSCOPE_TORCH_SITE}/nvidia/*/lib/libcublas.so.*")
  if(NOT _nnscope_cublas)
    message(FATAL_ERROR "NNSCOPE_CUDA=ON: NVIDIA's CUDA libraries (cuBLAS, ...) are not in ${NNSCOPE_TORCH_SITE}/nvidia; "
                        "run packaging/install-deps.sh --torch wheel --cuda.")
  endif()
  # Nothing in nnscope calls libtorch_cuda by name: it registers the CUDA kernels and hooks when it is loaded, so it is
  # linked whether or not the linker thinks it is needed.
  list(APPEND _nnscope_torch_libs "-Wl,--no-as-needed" "${_nnscope_torch}/lib/libtorch_cuda.so"
       "${_nnscope_torch}/lib/libc10_cuda.so" "-Wl,--as-needed")
endif()

if(NOT TARGET torch)
  add_library(torch INTERFACE IMPORTED)
  set_target_properties(torch PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
                                         INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
                                         INTERFACE_LINK_LIBRARIES "${_nnscope_torch_libs}"
                                         INTERFACE_COMPILE_OPTIONS "${TORCH_CXX_FLAGS}")
  target_compile_features(torch INTERFACE cxx_std_20)  # the wheel's headers need C++20
endif()
set(TORCH_LIBRARIES torch)
# The libraries' folder, first in the programs' run path (CMakeLists.txt): the wheel's own libgomp is then the one
# libgomp of the process, shared by libtorch_cpu and nnscope's OpenMP code (core/model/gemv.cpp).
set(TORCH_LIBRARY_DIR "${_nnscope_torch}/lib")

set(_nnscope_torch_version_h "${_nnscope_torch}/include/torch/headeronly/version.h")  # torch >= 2.8
if(NOT EXISTS "${_nnscope_torch_version_h}")
  set(_nnscope_torch_version_h "${_nnscope_torch}/include/torch/csrc/api/include/torch/version.h")
endif()
file(STRINGS "${_nnscope_torch_version_h}" _nnscope_torch_version_lines REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(_line ${_nnscope_torch_version_lines})
  string(REGEX MATCH "TORCH_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+)" _m "${_line}")
  set(_nnscope_torch_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
set(Torch_VERSION "${_nnscope_torch_MAJOR}.${_nnscope_torch_MINOR}.${_nnscope_torch_PATCH}")
set(Torch_FOUND TRUE)
