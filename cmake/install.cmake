# `cmake --install <build dir> [--prefix DIR]` installs ferry as a C++ library:
#
#   DIR/include/{core,comm,compress,ps,train,advise,moe}/...   the headers, included as in the sources
#   DIR/lib/libferry_*.a                                        one static library per module
#   DIR/lib/libferry_moe_spm.so                                 the SentencePiece shim (src/moe/CMakeLists.txt)
#   DIR/lib/cmake/ferry/ferryConfig.cmake, ferryTargets.cmake    the package: find_package(ferry)
#   DIR/bin/ferry                                               the command
#
# Every library target under src/ is exported as ferry::<name without "ferry_">: ferry::core,
# ferry::comm, ferry::train, ferry::advise, ferry::moe, ferry::moe_model, ... plus ferry::torch
# (libtorch and OpenMP, as this build found them). The apps, benchmarks, examples and tests are
# not part of the package.
include(CMakePackageConfigHelpers)

# The library targets of src/ and its subdirectories, found rather than listed, so that a new module
# is exported without touching this file.
function(ferry_collect_libraries dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(found)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "INTERFACE_LIBRARY")
      list(APPEND found ${target})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    ferry_collect_libraries(${subdir} sub)
    list(APPEND found ${sub})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

set(ferry_exported)
if(TARGET ferry_torch)
  list(APPEND ferry_exported ferry_torch)
endif()
foreach(module core comm compress ps train advise moe)
  if(EXISTS ${PROJECT_SOURCE_DIR}/src/${module}/CMakeLists.txt)
    ferry_collect_libraries(${PROJECT_SOURCE_DIR}/src/${module} libraries)
    list(APPEND ferry_exported ${libraries})
  endif()
endforeach()
foreach(target ${ferry_exported})
  string(REGEX REPLACE "^ferry_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
endforeach()

install(TARGETS ${ferry_exported} EXPORT ferryTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
# Loaded with dlopen by ferry::moe_tokenizer, never linked: installed, not exported.
if(TARGET ferry_moe_spm)
  install(TARGETS ferry_moe_spm LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# The command finds the shim next to the libraries: bin/../lib. Its run path in the build tree
# also names the shim's build directory (a link option of ferry_moe_tokenizer, which CMake's own
# rewrite keeps): the installed command gets exactly bin/../lib, so it never loads from the build tree.
if(TARGET ferry)
  set_target_properties(ferry PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS ferry RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(CODE "file(RPATH_SET FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/ferry\"
                          NEW_RPATH \"\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}\")")
endif()

# What ferryConfig.cmake must find for the exported targets' links (cmake/ferryConfig.cmake.in).
set(FERRY_PACKAGE_MPI OFF)
if(FERRY_WITH_MPI)
  set(FERRY_PACKAGE_MPI ON)
endif()
set(FERRY_PACKAGE_TORCH OFF)
if(TARGET ferry_torch)
  set(FERRY_PACKAGE_TORCH ON)
endif()
set(FERRY_PACKAGE_TEXT OFF)  # PCRE2 and ICU (cmake/text.cmake), used by ferry::moe_tokenizer
set(FERRY_PACKAGE_HTTPLIB OFF)  # cpp-httplib, used by ferry::moe_serve
if(TARGET ferry_moe_tokenizer)
  set(FERRY_PACKAGE_TEXT ON)
endif()
if(TARGET ferry_moe_serve)
  set(FERRY_PACKAGE_HTTPLIB ON)
endif()

set(ferry_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
install(EXPORT ferryTargets NAMESPACE ferry:: DESTINATION ${ferry_package_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ferryConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ferryConfig.cmake INSTALL_DESTINATION ${ferry_package_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ferryConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ferryConfig.cmake ${PROJECT_BINARY_DIR}/ferryConfigVersion.cmake
  DESTINATION ${ferry_package_dir})
