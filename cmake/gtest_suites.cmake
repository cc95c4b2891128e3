# Script mode (cmake -P), run after a GoogleTest binary is linked: lists its tests and writes a
# CTest file with one entry per test suite (PREFIX + Suite, running --gtest_filter=Suite.*).
# One process per suite, not per test: every ferry test binary that links libtorch pays about
# 0.8 s of CPU to start (libtorch's operator registration), which over ~330 single-test processes
# was a tenth of the suite's time on 2 cores.
# Inputs: BIN, OUT, PREFIX, LABELS and ENV (lists joined by '|'), TIMEOUT (seconds per test).
# A suite whose tests all skip passes (gtest exits 0), as a suite with some skipped tests does.
string(REPLACE "|" ";" LABELS "${LABELS}")
string(REPLACE "|" ";" ENV "${ENV}")
execute_process(COMMAND "${BIN}" --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE rc
                TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --gtest_list_tests failed (${rc}):\n${listing}")
endif()
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites)
foreach(line IN LISTS lines)
  string(REGEX REPLACE " *#.*" "" line "${line}")  # "  # GetParam() = ..." comments
  if(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set(count_${suite} 0)
  elseif(line MATCHES "^  [^ ]" AND DEFINED suite)
    math(EXPR count_${suite} "${count_${suite}} + 1")
  endif()
endforeach()
if(NOT suites)
  message(FATAL_ERROR "${BIN} lists no tests")
endif()
set(text "")
foreach(suite IN LISTS suites)
  math(EXPR timeout "${TIMEOUT} * ${count_${suite}}")
  if(timeout GREATER 1500)
    set(timeout 1500)
  endif()
  string(APPEND text
    "add_test([==[${PREFIX}${suite}]==] [==[${BIN}]==] [==[--gtest_filter=${suite}.*]==])\n"
    "set_tests_properties([==[${PREFIX}${suite}]==] PROPERTIES LABELS [==[${LABELS}]==] TIMEOUT ${timeout}"
    " ENVIRONMENT [==[${ENV}]==])\n")
endforeach()
file(WRITE "${OUT}" "${text}")
