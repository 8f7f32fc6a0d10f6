# `make install` / `cmake --install`: the CLI, libdlakit.a with its headers, a CMake package
# (find_package(dlakit) -> dlakit::dlakit), a pkg-config file, the Python module, and dlakit's
# libcudla.so.1 in lib/dlakit/ so it never shadows NVIDIA's. `make package`: the same as a .deb (CPack).
# Every path is under "lib" (not a multiarch folder) and the CMake and pkg-config files find the prefix
# from where they lie, so an installed or unpacked tree works wherever it is.
include(CMakePackageConfigHelpers)

set(DLAKIT_PYTHON_INSTALL_DIR lib/python3/dist-packages CACHE STRING
    "Where the Python package goes, under the prefix (Debian's path for /usr)")

install(TARGETS dlakit_cli RUNTIME DESTINATION bin COMPONENT dlakit)
install(TARGETS dlakit dlakit_runtime EXPORT dlakitTargets ARCHIVE DESTINATION lib COMPONENT dlakit)
install(DIRECTORY src/ DESTINATION include/dlakit COMPONENT dlakit FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(DIRECTORY include/ DESTINATION include/dlakit COMPONENT dlakit)  # cudla.h, dlakit/cudla_ext.h
install(FILES ${DLAKIT_GEN}/program_generated.h ${DLAKIT_GEN}/plan_generated.h DESTINATION include/dlakit
        COMPONENT dlakit)
install(TARGETS cudla LIBRARY DESTINATION lib/dlakit COMPONENT dlakit NAMELINK_SKIP)

install(EXPORT dlakitTargets NAMESPACE dlakit:: DESTINATION lib/cmake/dlakit COMPONENT dlakit)
configure_package_config_file(cmake/dlakitConfig.cmake.in ${CMAKE_BINARY_DIR}/dlakitConfig.cmake
                              INSTALL_DESTINATION lib/cmake/dlakit)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/dlakitConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/dlakitConfig.cmake ${CMAKE_BINARY_DIR}/dlakitConfigVersion.cmake
        DESTINATION lib/cmake/dlakit COMPONENT dlakit)

# pkg-config: the static library and what it links (onnx ships no .pc; the rest do).
set(DLAKIT_PC_EXTRA_LIBS "")
if(DLAKIT_WITH_CUDA)
  set(DLAKIT_PC_EXTRA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt")
endif()
configure_file(cmake/dlakit.pc.in ${CMAKE_BINARY_DIR}/dlakit.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/dlakit.pc DESTINATION lib/pkgconfig COMPONENT dlakit)

if(DLAKIT_HAVE_PYTHON)
  install(TARGETS dlakit_python LIBRARY DESTINATION ${DLAKIT_PYTHON_INSTALL_DIR}/dlakit COMPONENT dlakit)
  install(FILES python/dlakit/__init__.py DESTINATION ${DLAKIT_PYTHON_INSTALL_DIR}/dlakit COMPONENT dlakit)
endif()

# --- `make package`: one .deb with all of the above under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dlakit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "dlakit authors <dlakit@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "NVIDIA DLA toolkit off the board: ONNX -> DLA compiler, emulated cuDLA runtime, CLI, Python module")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # the shared libraries the binaries load, from dpkg-shlibdeps
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR})
# What the C++ package's headers and static library need to be used, and numpy for the Python module.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "python3, python3-numpy, libonnx-dev, libprotobuf-dev, nlohmann-json3-dev, libflatbuffers-dev, libstb-dev, libjpeg-dev, pkg-config")
include(CPack)
