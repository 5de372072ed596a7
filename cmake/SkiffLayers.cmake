# One build target per layer of cmake/layers.txt.
#
# skiff_read_layers() reads the table. skiff_layer_root(LAYER OUT) makes the layer's include root
# in the build tree: symbolic links to the headers of LAYER and of every layer below it, and to
# LAYER's private headers (src/<layer>/*.h, storage/*.h), laid out as the sources include them
# ("skiff/format/dataset.h", "kernels/cpu/gemm.h", "src/model/layer.h"). A layer's sources are
# compiled against that root alone, so including a header of a layer above (or beside) it fails to
# compile: "skiff/train/trainer.h: No such file or directory". skiff_layer(LAYER ...) builds the
# layer's sources as an object library against its root, linked to the layers directly below it.

function(skiff_read_layers)
  file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/layers.txt lines REGEX "^[^#]")
  set(layers "")
  foreach(line ${lines})
    string(REGEX REPLACE "#.*" "" line "${line}")
    string(STRIP "${line}" line)
    if(line STREQUAL "")
      continue()
    endif()
    string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
    list(POP_FRONT fields layer)
    list(APPEND layers ${layer})
    set(SKIFF_BELOW_${layer} "${fields}" PARENT_SCOPE)
  endforeach()
  set(SKIFF_LAYERS "${layers}" PARENT_SCOPE)
endfunction()

# The layers below LAYER, directly or not.
function(skiff_layers_below layer out)
  set(result "")
  foreach(dep ${SKIFF_BELOW_${layer}})
    if(NOT DEFINED SKIFF_BELOW_${dep})
      message(FATAL_ERROR "cmake/layers.txt: ${layer} sits on ${dep}, which is not a layer")
    endif()
    skiff_layers_below(${dep} below_dep)
    list(APPEND result ${dep} ${below_dep})
  endforeach()
  list(REMOVE_DUPLICATES result)
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# "kernels/cpu" -> "kernels_cpu": target and folder names.
function(skiff_layer_id layer out)
  string(REPLACE "/" "_" id "${layer}")
  set(${out} ${id} PARENT_SCOPE)
endfunction()

function(skiff_link_into root name target)
  get_filename_component(parent ${root}/${name} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${target} ${root}/${name} SYMBOLIC)
endfunction()

# Where LAYER's public headers are, as "include path;real folder" pairs (base: the files).
function(skiff_layer_headers root layer)
  set(src ${PROJECT_SOURCE_DIR})
  if(layer STREQUAL "base")
    # CONFIGURE_DEPENDS: a new base header re-runs the configuration, which links it.
    file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${src}/include/skiff ${src}/include/skiff/*.h)
    foreach(h ${headers})
      skiff_link_into(${root} skiff/${h} ${src}/include/skiff/${h})
    endforeach()
  elseif(layer MATCHES "^kernels/")
    skiff_link_into(${root} ${layer} ${src}/${layer})
  elseif(layer STREQUAL "tools")
    skiff_link_into(${root} tools/skiff ${src}/tools/skiff)
  elseif(IS_DIRECTORY ${src}/include/skiff/${layer})
    skiff_link_into(${root} skiff/${layer} ${src}/include/skiff/${layer})
  endif()
endfunction()

# Makes LAYER's include root (see the top of this file), once per configuration, and returns its
# path in OUT.
function(skiff_layer_root layer out)
  skiff_layer_id(${layer} id)
  set(root ${CMAKE_BINARY_DIR}/layer_includes/${id})
  set(${out} ${root} PARENT_SCOPE)
  get_property(made GLOBAL PROPERTY SKIFF_LAYER_ROOT_${id})
  if(made)
    return()  # e.g. the model's, for the CUDA model's sources after the model layer's
  endif()
  set_property(GLOBAL PROPERTY SKIFF_LAYER_ROOT_${id} TRUE)
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  skiff_layers_below(${layer} below)
  foreach(visible ${layer} ${below})
    skiff_layer_headers(${root} ${visible})
  endforeach()
  # Private headers, for the layer's own sources only.
  if(layer STREQUAL "storage")
    skiff_link_into(${root} storage ${PROJECT_SOURCE_DIR}/storage)
  elseif(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${layer})
    skiff_link_into(${root} src/${layer} ${PROJECT_SOURCE_DIR}/src/${layer})
  endif()
endfunction()

# The object library skiff_<id> of LAYER: SOURCES compiled against the layer's include root,
# linked to the layers directly below it and to LIBRARIES (the packages the layer uses).
function(skiff_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBRARIES")
  skiff_layer_id(${layer} id)
  skiff_layer_root(${layer} root)
  add_library(skiff_${id} OBJECT ${arg_SOURCES})
  target_include_directories(skiff_${id} PRIVATE ${root})
  target_link_libraries(skiff_${id} PUBLIC skiff_options ${arg_LIBRARIES})
  foreach(dep ${SKIFF_BELOW_${layer}})
    skiff_layer_id(${dep} dep_id)
    # The CUDA kernels are linked into the CUDA library only (loaded at run time), never into a
    # layer of the core: their headers are visible from above, their link requirements are not.
    if(TARGET skiff_${dep_id} AND NOT dep STREQUAL "kernels/cuda")
      target_link_libraries(skiff_${id} PUBLIC skiff_${dep_id})
    endif()
  endforeach()
endfunction()
