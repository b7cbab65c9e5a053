# The link graph, checked where it is decided: every library a target ends up linking,
# walked through LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES (a static library's PRIVATE
# dependencies reach whoever links it as $<LINK_ONLY:...>). The linker's --as-needed hides
# an unused libvirt from the binary, not from the build: the closure is what a module's
# CMake links drag along. Written to <build>/lint/<target>.links at configure time and
# checked by tests/lint/check_links.py under ctest. Included last, when every target exists.

function(_stockade_closure_walk item)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
    if(item STREQUAL "" OR item MATCHES "^\\$<" OR item IN_LIST _stockade_seen)
        return()
    endif()
    list(APPEND _stockade_seen "${item}")
    set(_stockade_seen "${_stockade_seen}" PARENT_SCOPE)
    if(NOT TARGET "${item}")
        return()
    endif()
    get_target_property(type "${item}" TYPE)
    set(deps "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(direct "${item}" LINK_LIBRARIES)
        if(direct)
            list(APPEND deps ${direct})
        endif()
    endif()
    get_target_property(iface "${item}" INTERFACE_LINK_LIBRARIES)
    if(iface)
        list(APPEND deps ${iface})
    endif()
    foreach(dep IN LISTS deps)
        _stockade_closure_walk("${dep}")
    endforeach()
    set(_stockade_seen "${_stockade_seen}" PARENT_SCOPE)
endfunction()

# stockade_link_closure(<target> <out file>)
function(stockade_link_closure target out)
    set(_stockade_seen "")
    _stockade_closure_walk("${target}")
    list(REMOVE_ITEM _stockade_seen "${target}")
    list(SORT _stockade_seen)
    list(JOIN _stockade_seen "\n" text)
    file(WRITE "${out}" "${text}\n")
endfunction()

get_property(_replays GLOBAL PROPERTY STOCKADE_FUZZ_REPLAY_TARGETS)
set(_replay_files "")
foreach(t IN LISTS _replays)
    stockade_link_closure(${t} ${CMAKE_BINARY_DIR}/lint/${t}.links)
    list(APPEND _replay_files ${CMAKE_BINARY_DIR}/lint/${t}.links)
endforeach()
stockade_link_closure(stockade_config ${CMAKE_BINARY_DIR}/lint/stockade_config.links)

# Parsers of hostile bytes link nothing that talks to another daemon; the config parser
# (hostd/config.c over the modules' *_config libraries) links only pure parsers: base, admit,
# egress's policy (which reads HTTP/1 first flights with proto's parser, so protobuf-c
# comes along) and extract's limits.
stockade_script_test(NAME unit_fuzz_links LABEL unit
                     COMMAND ${STOCKADE_LINT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_links.py
                             "libvirt|libpq|guestfs" ${_replay_files})
stockade_script_test(NAME unit_config_links LABEL unit
                     COMMAND ${STOCKADE_LINT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_links.py
                             "libvirt|libpq|guestfs|microhttpd|MHD|jansson|curl|sqlite|stockade_(pool|virt|channel|loop|sessions|http|e2b|cluster|store|extract)$"
                             ${CMAKE_BINARY_DIR}/lint/stockade_config.links)
