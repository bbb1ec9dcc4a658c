# Shared build settings for qgpu targets.

# Warnings as errors for every target of ours.
function(qgpu_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-missing-field-initializers)
  if(QGPU_SANITIZE)
    # GCC 12's -Wmaybe-uninitialized misfires on instrumented std::regex/std::function code
    # (libstdc++'s _State copy); the uninstrumented Release build keeps the warning.
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined
                                             -Wno-maybe-uninitialized)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# A unity build (ci/build.sh, CMAKE_UNITY_BUILD) gains nothing from a target of one source: it
# would only wrap it, and GCC then takes the #included .cpp for a header (-Wsubobject-linkage on
# model/decoder.cpp's Decoder::Impl, whose fields have anonymous-namespace types).
function(qgpu_no_unity_for_one_source target)
  list(LENGTH ARGN sources)
  if(sources EQUAL 1)
    set_target_properties(${target} PROPERTIES UNITY_BUILD OFF)
  endif()
endfunction()

# qgpu_library(NAME SOURCES ... DEPS ...): one library per folder, includes from the repo root.
function(qgpu_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  qgpu_no_unity_for_one_source(${name} ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_definitions(${name} PUBLIC QGPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  qgpu_warnings(${name})
endfunction()

# qgpu_test(NAME LABELS cpu|torch|gpu|tools [SERIAL_PART FILTER] SOURCES ... DEPS ...): a GoogleTest
# binary registered with CTest. Labels say what the test needs: `cpu` (nothing), `tools`
# (clang-14/nvcc/ptxas), `torch` (LibTorch), `gpu` (an NVIDIA GPU; skips with a reason when none).
# SERIAL_PART: the binary's tests matching the GoogleTest filter run as a CTest test of their own,
# NAME_serial, alone (RUN_SERIAL: never beside another test under `ctest -j`, for a model that
# needs most of the machine's memory); NAME runs the others. A test that runs alone gets the BLAS
# threads of every core (qgpu_run_alone).
function(qgpu_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;SERIAL_PART" "LABELS;SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  qgpu_no_unity_for_one_source(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  qgpu_warnings(${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(properties LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} SKIP_RETURN_CODE 77
                 WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  if(ARG_SERIAL_PART)
    add_test(NAME ${name} COMMAND ${name} --gtest_filter=-${ARG_SERIAL_PART})
    add_test(NAME ${name}_serial COMMAND ${name} --gtest_filter=${ARG_SERIAL_PART})
    set_tests_properties(${name}_serial PROPERTIES ${properties})
    qgpu_run_alone(${name}_serial)
  else()
    add_test(NAME ${name} COMMAND ${name})
  endif()
  set_tests_properties(${name} PROPERTIES ${properties})
  if("cpu" IN_LIST ARG_LABELS)
    qgpu_cpu_test_target(${name})
  endif()
endfunction()

# qgpu_run_alone(TEST): TEST never runs beside another under `ctest -j` (RUN_SERIAL), so its BLAS
# may use every core: ci/test.sh gives the tests that run in pairs one OpenBLAS thread each, and
# this test OPENBLAS_NUM_THREADS = the core count instead (measured: the memory pipeline's serial
# part 244 -> 178 s, the model leg 222 -> 195 s on two cores; the decode is memory-bound).
cmake_host_system_information(RESULT QGPU_CORES QUERY NUMBER_OF_LOGICAL_CORES)
if(QGPU_CORES LESS 1)
  set(QGPU_CORES 1)
endif()
function(qgpu_run_alone test)
  set_tests_properties(${test} PROPERTIES RUN_SERIAL TRUE ENVIRONMENT "OPENBLAS_NUM_THREADS=${QGPU_CORES}")
endfunction()

# `qgpu_cpu_tests` builds what `ctest -L cpu` runs and nothing else (ci/sanitize.sh builds only
# it). A cpu test that is not a qgpu_test (a command line of a tool) names its tool here.
add_custom_target(qgpu_cpu_tests)
function(qgpu_cpu_test_target target)
  add_dependencies(qgpu_cpu_tests ${target})
endfunction()
