# A test (cmake -DFILES=a.so;b.so -P check_exports.cmake): the shared objects export nothing of the
# cuDNN frontend or nlohmann::json, which PyTorch and XLA carry in other versions (their inline
# functions and statics would bind process-wide to whichever library loaded first). std templates
# over the frontend's enums stay exported (libstdc++ makes namespace std visible) and are harmless.
foreach(file IN LISTS FILES)
  execute_process(COMMAND nm -D -C --defined-only "${file}" OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${file}")
  endif()
  string(REGEX MATCHALL "\n[0-9a-f]+ [A-Za-z] [^\n]*(cudnn_frontend|nlohmann)::[^\n]*" found "\n${symbols}")
  set(bad "")
  foreach(line IN LISTS found)
    if(NOT line MATCHES "^\n[0-9a-f]+ [A-Za-z] std::")
      string(APPEND bad "${line}")
    endif()
  endforeach()
  if(bad)
    string(SUBSTRING "${bad}" 0 2000 shown)
    message(FATAL_ERROR "${file} exports the cuDNN frontend's or nlohmann's symbols:${shown}")
  endif()
  message(STATUS "${file}: no cuDNN frontend or nlohmann symbol exported")
endforeach()
