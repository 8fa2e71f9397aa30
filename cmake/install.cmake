# `cmake --install build --prefix P`:
#   P/bin/g5sim                      the command line (finds P/share/g5sim by its own location)
#   P/lib/libg5sim.so*               the library of <g5sim/g5sim.hpp>, serve.hpp, search.hpp, ...
#   P/include/g5sim/*.hpp            its public headers (api/, serving/ and explore/ include/)
#   P/lib/cmake/g5sim/               the CMake package: find_package(g5sim CONFIG REQUIRED),
#                                    target_link_libraries(app g5sim::g5sim)
#   P/share/g5sim/configs/           the shipped chip and model configs
#   P/share/g5sim/validation/        the public measurements (g5sim validate's default table)
#   P/lib/python3/dist-packages/g5sim/  the Python module (python/CMakeLists.txt)
include(CMakePackageConfigHelpers)

install(TARGETS g5sim_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS g5sim_shared EXPORT g5simTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(floor api serving explore)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${floor}/include/g5sim DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs DESTINATION ${CMAKE_INSTALL_DATADIR}/g5sim)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/validation DESTINATION ${CMAKE_INSTALL_DATADIR}/g5sim)

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/g5sim)
install(EXPORT g5simTargets NAMESPACE g5sim:: DESTINATION ${package_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/g5simConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/g5simConfig.cmake INSTALL_DESTINATION ${package_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/g5simConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/g5simConfig.cmake ${PROJECT_BINARY_DIR}/g5simConfigVersion.cmake
        DESTINATION ${package_dir})
