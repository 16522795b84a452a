# Kernel generation: every kernel of the library is declared through attngen_add_kernel(), which
# runs the generator at build time (add_halide_library) and records the kernel for the registry
# that the runtime dispatches through (attngen_write_registry). No hand-kept kernel list.

set(ATTNGEN_RUNTIME_TARGET "" CACHE INTERNAL "Halide runtime shared by all kernels")

# Target string for a device: CPU kernels are multi-target (CPU_TARGETS, default all of
# ATTNGEN_CPU_TARGETS); GPU kernels use the baseline CPU target (their host code is trivial) plus
# the GPU API.
function(_attngen_device_targets DEVICE CPU_TARGETS OUT_TARGETS OUT_FEATURES)
    list(GET ATTNGEN_CPU_TARGETS -1 baseline)
    if (DEVICE STREQUAL "cpu")
        set(targets ${CPU_TARGETS})
        set(features "")
    elseif (DEVICE STREQUAL "opencl")
        set(targets ${baseline})
        set(features opencl)
    elseif (DEVICE STREQUAL "cuda")
        set(targets ${baseline})
        set(features cuda ${ATTNGEN_CUDA_CAPABILITY})
    else ()
        message(FATAL_ERROR "attngen: unknown device '${DEVICE}'")
    endif ()
    set(${OUT_TARGETS} ${targets} PARENT_SCOPE)
    set(${OUT_FEATURES} ${features} PARENT_SCOPE)
endfunction()

# CPU targets that carry a fast path for HEAD_DIM: all but the x86 fallbacks without AVX2, unless
# ATTNGEN_FALLBACK_FAST_HEAD_DIMS lists it. The runtime runs a fixed head_dim kernel only where the
# CPU variant it dispatches to is one of them, the generic kernel elsewhere.
function(attngen_fast_path_targets HEAD_DIM OUT)
    string(REPLACE "," ";" fallback_dims "${ATTNGEN_FALLBACK_FAST_HEAD_DIMS}")
    set(targets "")
    foreach (target IN LISTS ATTNGEN_CPU_TARGETS)
        if (target MATCHES "^x86" AND NOT target MATCHES "-avx2" AND NOT HEAD_DIM IN_LIST fallback_dims)
            continue()
        endif ()
        list(APPEND targets ${target})
    endforeach ()
    set(${OUT} ${targets} PARENT_SCOPE)
endfunction()

# attngen_add_kernel(<name> GENERATOR <gen> DEVICE cpu|opencl|cuda KIND attention|op
#                    [SCHEME <scheme>] [OPTIONS <k:v,...>] [SHAPE prefill|decode] [DTYPE f32|bf16] [OP <op>]
#                    [HEAD_DIM <d>] [CPU_TARGETS <target>...] [PARAMS ...])
# HEAD_DIM: the one head_dim the kernel computes (0, the default: any). CPU_TARGETS: the CPU targets
# of a CPU kernel (default: ATTNGEN_CPU_TARGETS).
function(attngen_add_kernel NAME)
    cmake_parse_arguments(ARG "" "GENERATOR;DEVICE;KIND;SCHEME;OPTIONS;SHAPE;DTYPE;OP;HEAD_DIM" "PARAMS;CPU_TARGETS"
                          ${ARGN})
    if (NOT ARG_DTYPE)
        set(ARG_DTYPE f32)
    endif ()
    if (NOT ARG_HEAD_DIM)
        set(ARG_HEAD_DIM 0)
    endif ()
    if (NOT ARG_CPU_TARGETS)
        set(ARG_CPU_TARGETS ${ATTNGEN_CPU_TARGETS})
    endif ()
    _attngen_device_targets(${ARG_DEVICE} "${ARG_CPU_TARGETS}" targets features)

    set(extra "")
    if (ATTNGEN_EMIT_STMT)
        list(APPEND extra STMT ${NAME}_stmt ASSEMBLY ${NAME}_asm)
    endif ()
    if (ATTNGEN_RUNTIME_TARGET)
        list(APPEND extra USE_RUNTIME ${ATTNGEN_RUNTIME_TARGET})
    endif ()

    add_halide_library(${NAME} FROM attngen_generators
                       GENERATOR ${ARG_GENERATOR}
                       TARGETS ${targets}
                       FEATURES ${features}
                       PARAMS ${ARG_PARAMS}
                       ${extra})
    if (NOT ATTNGEN_RUNTIME_TARGET)
        set(ATTNGEN_RUNTIME_TARGET ${NAME}.runtime CACHE INTERNAL "")
    endif ()

    # The registry row: CPU kernels name the CPU targets they hold (the runtime checks a fixed
    # head_dim kernel's against the variant it dispatches to).
    set(cpu_targets "")
    if (ARG_DEVICE STREQUAL "cpu")
        string(REPLACE ";" "," cpu_targets "${ARG_CPU_TARGETS}")
    endif ()
    set_property(GLOBAL APPEND PROPERTY ATTNGEN_KERNEL_LIBRARIES ${NAME})
    set_property(GLOBAL APPEND PROPERTY ATTNGEN_KERNEL_ENTRIES
                 "${NAME}|${ARG_KIND}|${ARG_SCHEME}|${ARG_OPTIONS}|${ARG_SHAPE}|${ARG_DEVICE}|${ARG_OP}|${ARG_DTYPE}|${ARG_HEAD_DIM}|${cpu_targets}")
endfunction()

# attngen_add_bf16_dot_kernel(<name> <attngen_add_kernel's arguments>): a CPU kernel for
# ATTNGEN_BF16_DOT_TARGET, generated as LLVM IR and compiled by llc-14 with ATTNGEN_BF16_DOT_LLC_FLAGS, so
# that it holds avx512_bf16 dot products but no AVX512-FP16 instruction (Halide would compile that target
# for a Sapphire Rapids CPU). The registry row names that one target: the runtime picks such a kernel
# where the CPU has avx512_bf16 (runtime/src/dispatch.cpp).
function(attngen_add_bf16_dot_kernel NAME)
    cmake_parse_arguments(ARG "" "GENERATOR;DEVICE;KIND;SCHEME;OPTIONS;SHAPE;DTYPE;OP;HEAD_DIM" "PARAMS" ${ARGN})
    set(dir ${CMAKE_CURRENT_BINARY_DIR}/bf16_dot)
    add_custom_command(OUTPUT ${dir}/${NAME}.ll ${dir}/${NAME}.h
                       COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
                       COMMAND attngen_generators -n ${NAME} -d 0 -g ${ARG_GENERATOR} -f ${NAME}
                               -e c_header,llvm_assembly -o ${dir} target=${ATTNGEN_BF16_DOT_TARGET}-no_runtime
                               ${ARG_PARAMS}
                       DEPENDS attngen_generators
                       VERBATIM)
    add_custom_command(OUTPUT ${dir}/${NAME}.o
                       COMMAND ${ATTNGEN_LLC} -O3 ${ATTNGEN_BF16_DOT_LLC_FLAGS} --relocation-model=pic
                               --fp-contract=fast -filetype=obj ${dir}/${NAME}.ll -o ${dir}/${NAME}.o
                       DEPENDS ${dir}/${NAME}.ll
                       VERBATIM)
    add_library(${NAME} STATIC ${dir}/${NAME}.o ${dir}/${NAME}.h)
    set_target_properties(${NAME} PROPERTIES LINKER_LANGUAGE CXX)
    target_include_directories(${NAME} INTERFACE ${dir})
    target_link_libraries(${NAME} INTERFACE ${ATTNGEN_RUNTIME_TARGET})
    set_property(GLOBAL APPEND PROPERTY ATTNGEN_KERNEL_LIBRARIES ${NAME})
    set_property(GLOBAL APPEND PROPERTY ATTNGEN_KERNEL_ENTRIES
                 "${NAME}|${ARG_KIND}|${ARG_SCHEME}|${ARG_OPTIONS}|${ARG_SHAPE}|cpu|${ARG_OP}|${ARG_DTYPE}|${ARG_HEAD_DIM}|${ATTNGEN_BF16_DOT_TARGET}")
endfunction()

# Reads ATTNGEN_TUNED_FILE once per file into global properties ATTNGEN_TUNED|<cpu vendor>|<scheme>|<options>|
# <shape class>|<head dim>, each entry's generator parameters (string(JSON) parses the whole text on every
# call: looked up per kernel, the file tripled the configure time). The vendor is empty for entries that
# name none (tuned before entries recorded it): they serve every vendor without entries of its own.
function(_attngen_load_tuned_entries)
    get_property(loaded GLOBAL PROPERTY ATTNGEN_TUNED_LOADED_FILE)
    get_property(was_loaded GLOBAL PROPERTY ATTNGEN_TUNED_LOADED_FILE SET)
    if (was_loaded AND "${loaded}" STREQUAL "${ATTNGEN_TUNED_FILE}")
        return()
    endif ()
    get_property(old_keys GLOBAL PROPERTY ATTNGEN_TUNED_KEYS)
    foreach (key IN LISTS old_keys)
        set_property(GLOBAL PROPERTY "${key}")
    endforeach ()
    set_property(GLOBAL PROPERTY ATTNGEN_TUNED_LOADED_FILE "${ATTNGEN_TUNED_FILE}")
    set(keys "")
    if (EXISTS "${ATTNGEN_TUNED_FILE}")
        file(READ "${ATTNGEN_TUNED_FILE}" content)
        string(JSON count ERROR_VARIABLE error LENGTH "${content}" entries)
        if (error)
            message(WARNING "attngen: cannot read ${ATTNGEN_TUNED_FILE}: ${error}")
            set(count 0)
        endif ()
        if (count GREATER 0)
            math(EXPR last "${count} - 1")
            foreach (n RANGE ${last})
                string(JSON entry GET "${content}" entries ${n})
                string(JSON scheme GET "${entry}" scheme)
                string(JSON options GET "${entry}" options)
                string(JSON shape GET "${entry}" shape_class)
                string(JSON head_dim GET "${entry}" head_dim)
                string(JSON vendor ERROR_VARIABLE no_vendor GET "${entry}" cpu_vendor)
                if (no_vendor)
                    set(vendor "")
                endif ()
                set(entry_params "")
                foreach (name query_tile key_chunk qk_block_keys pv_block_rows vector_width split_keys trim_chunk_keys merge
                              grouped_decode_key_runs)
                    string(JSON value ERROR_VARIABLE missing GET "${entry}" params ${name})
                    if (NOT missing)
                        list(APPEND entry_params "${name}=${value}")
                    endif ()
                endforeach ()
                set(key "ATTNGEN_TUNED|${vendor}|${scheme}|${options}|${shape}|${head_dim}")
                set_property(GLOBAL PROPERTY "${key}" "${entry_params}")
                list(APPEND keys "${key}")
            endforeach ()
        endif ()
    endif ()
    set_property(GLOBAL PROPERTY ATTNGEN_TUNED_KEYS "${keys}")
endfunction()

# Tuned CPU schedule parameters (attngen-tune writes them): the entry of a kernel's scheme, options,
# shape class and head dim, as generator parameters; a head dim without an entry of its own (and the
# generic kernel, HEAD_DIM 0) takes the head_dim 64 entry. Entries of ATTNGEN_TUNED_CPU_VENDOR come
# first (its head dim's, then its head_dim 64 one), then those for any vendor. No entry: the hand
# schedule's defaults.
function(attngen_tuned_params SCHEME OPTIONS SHAPE HEAD_DIM OUT)
    _attngen_load_tuned_entries()
    set(prefixes "")
    if (ATTNGEN_TUNED_CPU_VENDOR)
        list(APPEND prefixes "ATTNGEN_TUNED|${ATTNGEN_TUNED_CPU_VENDOR}|")
    endif ()
    list(APPEND prefixes "ATTNGEN_TUNED||")  # entries for any vendor
    foreach (prefix IN LISTS prefixes)
        foreach (head_dim IN ITEMS ${HEAD_DIM} 64)
            get_property(params GLOBAL PROPERTY "${prefix}${SCHEME}|${OPTIONS}|${SHAPE}|${head_dim}")
            if (params)
                set(${OUT} ${params} PARENT_SCOPE)
                return()
            endif ()
        endforeach ()
    endforeach ()
    set(${OUT} "" PARENT_SCOPE)
endfunction()

# Generator parameters of a bf16 dot-product kernel from its fp32 entry's: prefill's key_chunk times
# ATTNGEN_BF16_PREFILL_KEY_CHUNK_SCALE (the entry's K/V bytes per chunk, see AttngenOptions.cmake).
function(attngen_bf16_dot_params SHAPE PARAMS OUT)
    set(scale "${ATTNGEN_BF16_PREFILL_KEY_CHUNK_SCALE}")
    if (NOT scale)
        set(scale 1)
    endif ()
    set(result "")
    foreach (param IN LISTS PARAMS)
        if (SHAPE STREQUAL "prefill" AND param MATCHES "^key_chunk=([0-9]+)$")
            math(EXPR keys "${CMAKE_MATCH_1} * ${scale}")
            set(param key_chunk=${keys})
        endif ()
        list(APPEND result ${param})
    endforeach ()
    set(${OUT} ${result} PARENT_SCOPE)
endfunction()

# Generator parameters of every bf16 decode kernel (generic, fixed head_dim, dot products) from the fp32
# entry's: bf16_key_chunk_scale=ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE, with which the generator multiplies
# key_chunk (the entry's K/V bytes per chunk, see AttngenOptions.cmake; not for schemes with a value term).
# Split-K entries (split_keys=1) keep their chunks: there the chunk count is the call's parallelism.
function(attngen_bf16_decode_params PARAMS OUT)
    set(result ${PARAMS})
    list(FIND PARAMS "split_keys=1" split_keys)
    if (split_keys EQUAL -1 AND ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE AND
        NOT ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE EQUAL 1)
        list(APPEND result bf16_key_chunk_scale=${ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE})
    endif ()
    set(${OUT} ${result} PARENT_SCOPE)
endfunction()

# Variants a scheme file declares with a line "// attngen-variants: opt:a opt:b" (default: one).
function(attngen_scheme_variants SCHEME_FILE OUT_VARIANTS)
    file(STRINGS ${SCHEME_FILE} lines REGEX "^// attngen-variants:")
    set(variants "")
    foreach (line IN LISTS lines)
        string(REGEX REPLACE "^// attngen-variants:[ ]*" "" line "${line}")
        separate_arguments(items UNIX_COMMAND "${line}")
        list(APPEND variants ${items})
    endforeach ()
    if (NOT variants)
        set(variants "-")
    endif ()
    set(${OUT_VARIANTS} ${variants} PARENT_SCOPE)
endfunction()

# Writes the registry source: one table row per kernel, calling it through its _argv entry and
# describing its arguments through its _metadata entry.
function(attngen_write_registry OUT_FILE)
    get_property(entries GLOBAL PROPERTY ATTNGEN_KERNEL_ENTRIES)
    set(includes "")
    set(rows "")
    foreach (entry IN LISTS entries)
        string(REPLACE "|" ";" fields "${entry}")
        list(GET fields 0 name)
        list(GET fields 1 kind)
        list(GET fields 2 scheme)
        list(GET fields 3 options)
        list(GET fields 4 shape)
        list(GET fields 5 device)
        list(GET fields 6 op)
        list(GET fields 7 dtype)
        list(GET fields 8 head_dim)
        list(GET fields 9 cpu_targets)
        string(APPEND includes "#include \"${name}.h\"\n")
        string(APPEND rows "    {\"${name}\", \"${kind}\", \"${scheme}\", \"${options}\", \"${shape}\", \"${device}\", \"${op}\", \"${dtype}\", ${head_dim}, \"${cpu_targets}\", ${name}_argv, ${name}_metadata},\n")
    endforeach ()
    set(content "// Generated by CMake (cmake/AttngenKernels.cmake). Do not edit.\n#include \"registry.h\"\n\n${includes}\nnamespace attngen::detail {\n\nconst KernelEntry kKernelTable[] = {\n${rows}};\nconst int kKernelCount = sizeof(kKernelTable) / sizeof(kKernelTable[0]);\n\n}  // namespace attngen::detail\n")
    file(CONFIGURE OUTPUT ${OUT_FILE} CONTENT "${content}" @ONLY)
endfunction()
