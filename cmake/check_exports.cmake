# A test (cmake -DFILES=a.so;b.so -P check_exports.cmake): the shared objects export nothing of the
# cuDNN frontend or nlohmann::json, which PyTorch and XLA carry in other versions (their inline
# functions and statics would bind process-wide to whichever library loaded first). std templates
# over the frontend's enums stay exported (libstdc++ makes namespace std visible) and are harmless.
foreach(file IN LISTS FILES)
  execute_process(COMMAND nm -D -C --defined-only "${file}" OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${file}")
  endif()
  # A symbol of theirs: with template arguments and parameter lists dropped, its qualified name (the
  # line's last word, after a return type or "guard variable for " and the like) is in their
  # namespace; std templates over their types are not.
  set(names "${symbols}")
  foreach(pass RANGE 12)
    string(REGEX REPLACE "<[^<>\n]*>" "" names "${names}")
    string(REGEX REPLACE "\\([^()\n]*\\)" "" names "${names}")
  endforeach()
  string(REGEX REPLACE " const\n" "\n" names "${names}\n")
  string(REPLACE ";" "," names "${names}")
  string(REPLACE "\n" ";" lines "${names}")
  set(bad "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-f]+ [A-Za-z] (.* )?(cudnn_frontend|nlohmann)::[^ ]*$")
      string(APPEND bad "\n${line}")
    endif()
  endforeach()
  if(bad)
    string(SUBSTRING "${bad}" 0 2000 shown)
    message(FATAL_ERROR "${file} exports the cuDNN frontend's or nlohmann's symbols:${shown}")
  endif()
  message(STATUS "${file}: no cuDNN frontend or nlohmann symbol exported")
endforeach()
