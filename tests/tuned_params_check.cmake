# Which tuned entry a kernel takes (attngen_tuned_params): its head dim's own entry, else the head_dim 64
# entry, else none; entries of ATTNGEN_TUNED_CPU_VENDOR before those for any vendor. And a bf16 dot-product
# kernel's and a bf16 decode kernel's parameters from
# its entry's (attngen_bf16_dot_params, attngen_bf16_decode_params). Run as: cmake -DATTNGEN_SOURCE_DIR=<repo> -DWORK_DIR=<dir> -P tuned_params_check.cmake
include(${ATTNGEN_SOURCE_DIR}/cmake/AttngenKernels.cmake)

set(ATTNGEN_TUNED_FILE "${WORK_DIR}/tuned_params_check.json")
# The head_dim 128 entry comes first for sdpa and last for alibi: the choice must not depend on order.
file(WRITE "${ATTNGEN_TUNED_FILE}" [=[
{"entries": [
 {"scheme": "sdpa", "options": "", "shape_class": "prefill", "head_dim": 128,
  "params": {"query_tile": 32, "key_chunk": 64}},
 {"scheme": "sdpa", "options": "", "shape_class": "prefill", "head_dim": 64,
  "params": {"query_tile": 64, "key_chunk": 128}},
 {"scheme": "sdpa", "options": "", "shape_class": "decode", "head_dim": 64,
  "params": {"query_tile": 1, "key_chunk": 512, "grouped_decode_key_runs": 1}},
 {"scheme": "alibi", "options": "", "shape_class": "prefill", "head_dim": 64,
  "params": {"query_tile": 48, "key_chunk": 256}},
 {"scheme": "alibi", "options": "", "shape_class": "prefill", "head_dim": 128,
  "params": {"query_tile": 16, "key_chunk": 32}},
 {"scheme": "rope", "options": "pairing:half", "shape_class": "prefill", "head_dim": 128,
  "params": {"query_tile": 8, "key_chunk": 16}},
 {"scheme": "sdpa", "options": "", "shape_class": "prefill", "head_dim": 64, "cpu_vendor": "GenuineIntel",
  "params": {"query_tile": 32, "key_chunk": 1024}},
 {"scheme": "t5", "options": "", "shape_class": "decode", "head_dim": 64, "cpu_vendor": "GenuineIntel",
  "params": {"query_tile": 1, "key_chunk": 2048}}
]}
]=])

function(expect SCHEME OPTIONS SHAPE HEAD_DIM EXPECTED)
    attngen_tuned_params("${SCHEME}" "${OPTIONS}" ${SHAPE} ${HEAD_DIM} got)
    if (NOT "${got}" STREQUAL "${EXPECTED}")
        message(FATAL_ERROR "${SCHEME} '${OPTIONS}' ${SHAPE} head_dim ${HEAD_DIM}: got '${got}', expected '${EXPECTED}'")
    endif ()
endfunction()

set(ATTNGEN_TUNED_CPU_VENDOR "")  # no vendor: entries for any vendor only
expect(sdpa "" prefill 128 "query_tile=32;key_chunk=64")
expect(sdpa "" prefill 64 "query_tile=64;key_chunk=128")
expect(sdpa "" prefill 0 "query_tile=64;key_chunk=128")    # the generic kernel
expect(sdpa "" prefill 256 "query_tile=64;key_chunk=128")  # no entry of its own
expect(sdpa "" decode 128 "query_tile=1;key_chunk=512;grouped_decode_key_runs=1")
expect(alibi "" prefill 128 "query_tile=16;key_chunk=32")
expect(alibi "" prefill 0 "query_tile=48;key_chunk=256")
expect(rope "pairing:half" prefill 128 "query_tile=8;key_chunk=16")
expect(rope "pairing:half" prefill 64 "")                  # no head_dim 64 entry: the hand schedule
expect(rope "pairing:interleaved" prefill 128 "")
expect(t5 "" decode 64 "")

# Another vendor's entries are not taken.
set(ATTNGEN_TUNED_CPU_VENDOR "AuthenticAMD")
expect(sdpa "" prefill 64 "query_tile=64;key_chunk=128")
expect(t5 "" decode 64 "")
# The vendor's own entries first, for every head dim (its head_dim 64 entry before another vendor's
# head_dim 128 one); where it has none, the entries for any vendor.
set(ATTNGEN_TUNED_CPU_VENDOR "GenuineIntel")
expect(sdpa "" prefill 64 "query_tile=32;key_chunk=1024")
expect(sdpa "" prefill 128 "query_tile=32;key_chunk=1024")
expect(sdpa "" prefill 0 "query_tile=32;key_chunk=1024")
expect(sdpa "" decode 128 "query_tile=1;key_chunk=512;grouped_decode_key_runs=1")
expect(alibi "" prefill 128 "query_tile=16;key_chunk=32")
expect(t5 "" decode 64 "query_tile=1;key_chunk=2048")
expect(t5 "" decode 128 "query_tile=1;key_chunk=2048")

# bf16 dot-product kernels: prefill's key chunk scaled, everything else as the entry says.
function(expect_dot SHAPE PARAMS EXPECTED)
    attngen_bf16_dot_params(${SHAPE} "${PARAMS}" got)
    if (NOT "${got}" STREQUAL "${EXPECTED}")
        message(FATAL_ERROR "bf16 dot ${SHAPE} '${PARAMS}': got '${got}', expected '${EXPECTED}'")
    endif ()
endfunction()
set(ATTNGEN_BF16_PREFILL_KEY_CHUNK_SCALE 2)
expect_dot(prefill "query_tile=64;key_chunk=128;qk_block_keys=4" "query_tile=64;key_chunk=256;qk_block_keys=4")
expect_dot(decode "query_tile=1;key_chunk=512;grouped_decode_key_runs=1"
           "query_tile=1;key_chunk=512;grouped_decode_key_runs=1")
expect_dot(prefill "query_tile=64" "query_tile=64")  # no key_chunk: the schedule's default
set(ATTNGEN_BF16_PREFILL_KEY_CHUNK_SCALE 1)
expect_dot(prefill "query_tile=64;key_chunk=128" "query_tile=64;key_chunk=128")

# bf16 decode kernels: the generator scales the key chunk, except split-K's.
function(expect_bf16_decode PARAMS EXPECTED)
    attngen_bf16_decode_params("${PARAMS}" got)
    if (NOT "${got}" STREQUAL "${EXPECTED}")
        message(FATAL_ERROR "bf16 decode '${PARAMS}': got '${got}', expected '${EXPECTED}'")
    endif ()
endfunction()
set(ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE 2)
expect_bf16_decode("query_tile=1;key_chunk=512;split_keys=0"
                   "query_tile=1;key_chunk=512;split_keys=0;bf16_key_chunk_scale=2")
expect_bf16_decode("query_tile=1;key_chunk=2048;split_keys=1" "query_tile=1;key_chunk=2048;split_keys=1")
expect_bf16_decode("query_tile=1" "query_tile=1;bf16_key_chunk_scale=2")
set(ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE 1)
expect_bf16_decode("query_tile=1;key_chunk=512" "query_tile=1;key_chunk=512")
message(STATUS "tuned parameters: 20 selections, 4 bf16 dot-product and 4 bf16 decode parameter sets as expected")
