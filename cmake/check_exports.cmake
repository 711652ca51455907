# A test of what the library shows other libraries in a process (PyTorch and XLA carry the cuDNN
# frontend and nlohmann::json in other versions; their inline functions and statics bind process-wide
# to whichever library loaded first):
#   cmake -DNM=nm -DREADELF=readelf -DSHARED=a.so;b.so -DOBJECTS=x.o;y.o -DMODULE=m.so -P check_exports.cmake
# SHARED: shared objects that export nothing of the frontend or nlohmann (nm -D); OBJECTS: objects
# that give none of theirs default visibility (readelf: a static library's, linked into someone's
# shared object later); MODULE: the Python module, which exports its init function alone (a module that
# carries a copy of libstdc++ must not lend it to libbaracuda.so: python/module.map). std templates over
# the frontend's enums stay visible (libstdc++'s namespace std is) and are harmless.

# The lines ("<address> <kind> <demangled name>") naming a symbol of theirs: with template arguments and
# parameter lists dropped, the symbol's own qualified name (the line's last word, after a return type
# or "guard variable for " and the like) is in their namespace.
function(theirs text out)
  foreach(pass RANGE 12)
    string(REGEX REPLACE "<[^<>\n]*>" "" text "${text}")
    string(REGEX REPLACE "\\([^()\n]*\\)" "" text "${text}")
  endforeach()
  string(REGEX REPLACE " const\n" "\n" text "${text}\n")
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(found "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-f]+ [A-Za-z] (.* )?(cudnn_frontend|nlohmann)::[^ ]*$")
      string(APPEND found "\n${line}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

function(fail file what found)
  string(SUBSTRING "${found}" 0 2000 shown)
  message(FATAL_ERROR "${file} ${what}:${shown}")
endfunction()

foreach(file IN LISTS SHARED)
  execute_process(COMMAND ${NM} -D -C --defined-only "${file}" OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${file}")
  endif()
  theirs("${symbols}" found)
  if(found)
    fail("${file}" "exports the cuDNN frontend's or nlohmann's symbols" "${found}")
  endif()
  message(STATUS "${file}: no cuDNN frontend or nlohmann symbol exported")
endforeach()

foreach(file IN LISTS OBJECTS)
  execute_process(COMMAND ${READELF} -sW -C "${file}" OUTPUT_VARIABLE table RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${READELF} failed on ${file}")
  endif()
  # Defined, bound outside the object and of default visibility: "<n>: <value> <size> <type> <bind>
  # DEFAULT <ndx> <name>", as "<value> T <name>" lines.
  string(REGEX MATCHALL "[^\n]*(GLOBAL|WEAK|UNIQUE) +DEFAULT +[0-9]+ [^\n]*" visible "${table}")
  set(symbols "")
  foreach(line IN LISTS visible)
    string(REGEX REPLACE "^ *[0-9]+: ([0-9a-f]+) .* DEFAULT +[0-9]+ (.*)$" "\\1 T \\2" line "${line}")
    string(APPEND symbols "${line}\n")
  endforeach()
  theirs("${symbols}" found)
  if(found)
    fail("${file}" "gives the cuDNN frontend's or nlohmann's symbols default visibility" "${found}")
  endif()
  message(STATUS "${file}: no cuDNN frontend or nlohmann symbol of default visibility")
endforeach()

if(MODULE)
  execute_process(COMMAND ${NM} -D --defined-only "${MODULE}" OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${MODULE}")
  endif()
  string(REGEX REPLACE "[0-9a-f]+ [A-Za-z] " "" names "${symbols}")
  string(STRIP "${names}" names)
  if(NOT names STREQUAL "PyInit__baracuda")
    fail("${MODULE}" "exports more than PyInit__baracuda" "\n${names}")
  endif()
  message(STATUS "${MODULE}: exports PyInit__baracuda alone")
endif()
