# The python_tests CTest entry (python/CMakeLists.txt): `pip install .`, then pytest on the package
# as installed, as a user would take it. pip builds through scikit-build-core with this build tree as
# its build-dir and with this tree's own settings (build type, tests, profiler), so its configure
# finds the cache as it was and its build has nothing left to do; the wheel's contents (the module and
# the package's Python files) go into SITE, and pytest imports the package from there alone.
#   cmake -DPYTHON= -DSOURCE= -DBUILD= -DSITE= -DBUILD_TYPE= -DPROFILER= -DTESTS= [-DPRELOAD=] [-DASAN=]
#     -P pip_install_then_pytest.cmake
# PRELOAD / ASAN: the sanitizer runtime and options for pytest's interpreter alone (not for pip,
# CMake and ninja, which are not instrumented).
foreach(var PYTHON SOURCE BUILD SITE BUILD_TYPE PROFILER TESTS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "pip_install_then_pytest.cmake: -D${var}= is missing")
  endif()
endforeach()

execute_process(COMMAND "${PYTHON}" -c "import scikit_build_core" RESULT_VARIABLE found OUTPUT_QUIET ERROR_QUIET)
if(NOT found EQUAL 0)
  message(FATAL_ERROR "python_tests installs the package with pip through scikit-build-core: "
    "${PYTHON} -m pip install scikit-build-core")
endif()

file(REMOVE_RECURSE "${SITE}")
# --no-build-isolation: the build uses the nanobind and scikit-build-core already installed (the
# ones this tree was configured with); --no-deps --no-index: nothing fetched.
execute_process(
  COMMAND "${PYTHON}" -m pip install --quiet --no-build-isolation --no-deps --no-index --target "${SITE}"
    "--config-settings=build-dir=${BUILD}"
    "--config-settings=cmake.build-type=${BUILD_TYPE}"
    "--config-settings=cmake.define.BARACUDA_BUILD_TESTS=ON"
    "--config-settings=cmake.define.BARACUDA_BUILD_PROFILER=${PROFILER}"
    "${SOURCE}"
  RESULT_VARIABLE installed)
if(NOT installed EQUAL 0)
  message(FATAL_ERROR "pip install ${SOURCE} failed (exit ${installed})")
endif()
if(NOT EXISTS "${SITE}/baracuda/__init__.py")
  message(FATAL_ERROR "pip install put no baracuda package in ${SITE}")
endif()

set(environment "PYTHONPATH=${SITE}" "OMP_WAIT_POLICY=passive")
if(PRELOAD)
  list(APPEND environment "LD_PRELOAD=${PRELOAD}" "ASAN_OPTIONS=${ASAN}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env ${environment} "${PYTHON}" -m pytest -q -p no:cacheprovider "${TESTS}"
  WORKING_DIRECTORY "${SITE}"
  RESULT_VARIABLE tested)
if(NOT tested EQUAL 0)
  message(FATAL_ERROR "pytest on the installed package failed (exit ${tested})")
endif()
