#include "internal.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>
#include <type_traits>

namespace attngen::detail {

void fail(attngen_status code, const std::string &message) {
    throw Failure{code, message};
}

void write_error(char *error, size_t error_size, const std::string &message) {
    if (!error || error_size == 0) return;
    const size_t n = std::min(message.size(), error_size - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
}

std::string shape_string(const attngen_tensor &t) {
    std::ostringstream out;
    out << "[";
    for (int d = 0; d < t.rank; d++)
        out << (d ? ", " : "") << t.shape[d];
    out << "]";
    return out.str();
}

size_t element_size(attngen_dtype dtype) {
    return dtype == ATTNGEN_BFLOAT16 ? 2 : 4;
}

const char *dtype_name(attngen_dtype dtype) {
    switch (dtype) {
        case ATTNGEN_FLOAT32:
            return "float32";
        case ATTNGEN_INT32:
            return "int32";
        case ATTNGEN_BFLOAT16:
            return "bfloat16";
    }
    return "unknown";
}

namespace {

std::string dims_string(const DimNames &dims) {
    std::string s = "[";
    for (size_t d = 0; d < dims.size(); d++)
        s += (d ? ", " : "") + dims[d];
    return s + "]";
}
}  // namespace

bool is_present(const attngen_tensor *t) {
    return t && (t->data || t->rank > 0);
}

std::vector<int64_t> strides_of(const attngen_tensor &t) {
    std::vector<int64_t> strides(t.rank);
    bool all_zero = true;
    for (int d = 0; d < t.rank; d++)
        all_zero = all_zero && t.strides[d] == 0;
    if (all_zero) {
        int64_t stride = 1;
        for (int d = t.rank - 1; d >= 0; d--) {
            strides[d] = stride;
            stride *= std::max<int64_t>(t.shape[d], 1);
        }
    } else {
        for (int d = 0; d < t.rank; d++)
            strides[d] = t.strides[d];
    }
    return strides;
}

int64_t element_count(const attngen_tensor &t) {
    int64_t n = 1;
    for (int d = 0; d < t.rank; d++)
        n *= t.shape[d];
    return n;
}

void check_tensor(const attngen_tensor *t, const std::string &name, attngen_dtype dtype, const DimNames &dims,
                  const std::vector<int64_t> &expected) {
    const int rank = int(dims.size());
    if (!t) invalid(name + ": tensor is null, expected " + dims_string(dims));
    if (!t->data) invalid(name + ": data pointer is null");
    if (t->dtype != dtype) {
        invalid(name + ": dtype is " + dtype_name(t->dtype) + ", expected " + dtype_name(dtype));
    }
    if (t->rank != rank) {
        invalid(name + ": rank is " + std::to_string(t->rank) + ", expected " + std::to_string(rank) + " " +
                dims_string(dims));
    }
    for (int d = 0; d < rank; d++) {
        if (t->shape[d] < 0) {
            invalid(name + ": dimension " + std::to_string(d) + " (" + dims[d] + ") is " + std::to_string(t->shape[d]) +
                    ", expected >= 0");
        }
        if (d < int(expected.size()) && expected[d] >= 0 && t->shape[d] != expected[d]) {
            invalid(name + ": dimension " + std::to_string(d) + " (" + dims[d] + ") is " + std::to_string(t->shape[d]) +
                    ", expected " + std::to_string(expected[d]) + " (shape " + shape_string(*t) + ")");
        }
        if (t->shape[d] > std::numeric_limits<int32_t>::max()) {
            invalid(name + ": dimension " + std::to_string(d) + " (" + dims[d] + ") is too large for 32-bit indexing");
        }
    }
    // Strides: positive where the extent exceeds 1, and no two elements at one address.
    std::vector<int64_t> strides = strides_of(*t);
    std::vector<int> order;
    for (int d = 0; d < rank; d++) {
        if (t->shape[d] <= 1) continue;
        if (strides[d] < 1) {
            invalid(name + ": stride of dimension " + std::to_string(d) + " (" + dims[d] + ") is " +
                    std::to_string(strides[d]) + ", expected >= 1");
        }
        order.push_back(d);
    }
    std::sort(order.begin(), order.end(), [&](int a, int b) { return strides[a] < strides[b]; });
    for (size_t n = 1; n < order.size(); n++) {
        const int inner = order[n - 1], outer = order[n];
        if (strides[outer] < strides[inner] * t->shape[inner]) {
            invalid(name + ": strides too small: dimension " + std::to_string(outer) + " (" + dims[outer] +
                    ") has stride " + std::to_string(strides[outer]) + " but dimension " + std::to_string(inner) +
                    " (" + dims[inner] + ") spans " + std::to_string(strides[inner] * t->shape[inner]) + " elements");
        }
    }
    int64_t span = 0;
    for (int d = 0; d < rank; d++)
        span += strides[d] * std::max<int64_t>(t->shape[d] - 1, 0);
    if (span > std::numeric_limits<int32_t>::max()) invalid(name + ": too large for 32-bit indexing");
}

bool overlaps(const attngen_tensor &a, const attngen_tensor &b) {
    auto range = [](const attngen_tensor &t) {
        std::vector<int64_t> strides = strides_of(t);
        int64_t last = 0;
        for (int d = 0; d < t.rank; d++)
            last += strides[d] * std::max<int64_t>(t.shape[d] - 1, 0);
        const size_t bytes = element_size(t.dtype);
        const auto *begin = static_cast<const uint8_t *>(t.data);
        return std::make_pair(begin, begin + (last + 1) * bytes);
    };
    if (!a.data || !b.data || element_count(a) == 0 || element_count(b) == 0) return false;
    auto ra = range(a), rb = range(b);
    return ra.first < rb.second && rb.first < ra.second;
}

void check_finite(double value, const std::string &name) {
    if (!std::isfinite(value)) invalid(name + " is not finite");
}

namespace {

// The rows (along the innermost dimension) of a float32 or bfloat16 tensor, restricted to a range of
// one outer dimension, and whether each holds a non-finite value: a branch-free exponent test the
// compiler vectorizes.
struct FiniteScan {
    const uint8_t *data = nullptr;
    bool bf16 = false;
    std::vector<int64_t> strides, first, extent;  // per dimension: stride, first index, extent scanned
    int64_t row_length = 1, inner_stride = 1, rows = 0;
    std::atomic<bool> found{false};

    size_t element_bytes() const { return bf16 ? sizeof(uint16_t) : sizeof(float); }
    float value_at(const uint8_t *element) const {
        if (!bf16) {
            float value;
            std::memcpy(&value, element, sizeof value);
            return value;
        }
        uint16_t bits;
        std::memcpy(&bits, element, sizeof bits);
        return widen_bf16(bits);
    }
    // Element index (per dimension) of element n of scanned row `row`.
    std::vector<int64_t> index_of(int64_t row, int64_t n) const {
        std::vector<int64_t> index(first);
        const int inner = int(extent.size()) - 1;
        if (inner >= 0) index[inner] += n;
        for (int d = inner - 1; d >= 0; d--) {
            index[d] += row % extent[d];
            row /= extent[d];
        }
        return index;
    }
    const uint8_t *row_start(int64_t row) const {
        const int inner = int(extent.size()) - 1;
        int64_t offset = inner >= 0 ? first[inner] * strides[inner] : 0;
        for (int d = inner - 1; d >= 0; d--) {
            offset += (first[d] + row % extent[d]) * strides[d];
            row /= extent[d];
        }
        return data + offset * int64_t(element_bytes());
    }
    bool row_is_finite(int64_t row) const {
        const uint8_t *start = row_start(row);
        uint32_t non_finite = 0;
        if (inner_stride == 1 && !bf16) {
            for (int64_t n = 0; n < row_length; n++) {
                uint32_t bits;
                std::memcpy(&bits, start + n * sizeof bits, sizeof bits);
                non_finite |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
            }
        } else if (inner_stride == 1) {
            for (int64_t n = 0; n < row_length; n++) {
                uint16_t bits;
                std::memcpy(&bits, start + n * sizeof bits, sizeof bits);
                non_finite |= uint32_t((bits & 0x7f80u) == 0x7f80u);
            }
        } else {
            for (int64_t n = 0; n < row_length; n++)
                non_finite |= uint32_t(!std::isfinite(value_at(start + n * inner_stride * int64_t(element_bytes()))));
        }
        return non_finite == 0;
    }
};

// Tensors from this size are scanned by Halide's thread pool (the kernels' workers), in this many
// pieces: a DeBERTa decode call's tables are 8 MB per table at 32 heads (span 256, D = 128), where one
// core's scan took as long as half the kernel.
constexpr int64_t kParallelScanBytes = int64_t(1) << 20;
constexpr int kScanPieces = 16;

int scan_piece(void *, int piece, uint8_t *closure) {
    auto *scan = reinterpret_cast<FiniteScan *>(closure);
    const int64_t begin = scan->rows * piece / kScanPieces, end = scan->rows * (piece + 1) / kScanPieces;
    for (int64_t row = begin; row < end && !scan->found.load(std::memory_order_relaxed); row++) {
        if (!scan->row_is_finite(row)) scan->found.store(true, std::memory_order_relaxed);
    }
    return 0;
}

}  // namespace

void check_finite(const attngen_tensor &t, const std::string &name, int range_dim, int64_t range_first,
                  int64_t range_last) {
    FiniteScan scan;
    scan.data = static_cast<const uint8_t *>(t.data);
    scan.bf16 = t.dtype == ATTNGEN_BFLOAT16;
    scan.strides = strides_of(t);
    scan.first.assign(t.rank, 0);
    scan.extent.assign(t.shape, t.shape + t.rank);
    if (range_dim >= 0 && range_dim < t.rank) {
        range_first = std::max<int64_t>(range_first, 0);
        range_last = std::min<int64_t>(range_last, t.shape[range_dim] - 1);
        scan.first[range_dim] = range_first;
        scan.extent[range_dim] = range_last - range_first + 1;
    }
    int64_t count = 1;
    for (int64_t extent : scan.extent)
        count *= std::max<int64_t>(extent, 0);
    if (count == 0) return;
    const int inner = t.rank - 1;
    scan.row_length = t.rank > 0 ? scan.extent[inner] : 1;
    scan.inner_stride = t.rank > 0 ? scan.strides[inner] : 1;
    scan.rows = count / scan.row_length;
    if (count * int64_t(scan.element_bytes()) >= kParallelScanBytes && scan.rows >= kScanPieces) {
        halide_do_par_for(nullptr, scan_piece, 0, kScanPieces, reinterpret_cast<uint8_t *>(&scan));
        if (!scan.found.load()) return;
    }
    // Sequentially (small tensors, or to name the first non-finite element).
    for (int64_t row = 0; row < scan.rows; row++) {
        if (scan.row_is_finite(row)) continue;
        const uint8_t *start = scan.row_start(row);
        for (int64_t n = 0; n < scan.row_length; n++) {
            if (std::isfinite(scan.value_at(start + n * scan.inner_stride * int64_t(scan.element_bytes())))) continue;
            // Named by its row-major index in the whole tensor.
            const std::vector<int64_t> index = scan.index_of(row, n);
            int64_t flat = 0;
            for (int d = 0; d < t.rank; d++)
                flat = flat * t.shape[d] + index[d];
            invalid(name + ": element " + std::to_string(flat) + " is not finite");
        }
    }
}

namespace {
template <typename T>
attngen_tensor dense_view(std::vector<T> &values, const std::vector<int64_t> &shape, attngen_dtype dtype) {
    attngen_tensor view{};
    view.data = values.data();
    view.dtype = dtype;
    view.rank = int(shape.size());
    for (size_t d = 0; d < shape.size(); d++)
        view.shape[d] = shape[d];
    return view;
}
}  // namespace

namespace {
template <typename T>
OwnedTensor owned_values(std::vector<T> OwnedTensor::*storage, std::vector<T> values, const std::vector<int64_t> &shape,
                         attngen_dtype dtype) {
    OwnedTensor t;
    t.*storage = std::move(values);
    if ((t.*storage).empty()) (t.*storage).push_back(T{});  // keep a valid pointer for empty extents
    t.view = dense_view(t.*storage, shape, dtype);
    return t;
}
}  // namespace

OwnedTensor owned_f32(std::vector<float> values, std::vector<int64_t> shape) {
    return owned_values(&OwnedTensor::f32, std::move(values), shape, ATTNGEN_FLOAT32);
}

OwnedTensor owned_i32(std::vector<int32_t> values, std::vector<int64_t> shape) {
    return owned_values(&OwnedTensor::i32, std::move(values), shape, ATTNGEN_INT32);
}

OwnedTensor owned_bf16(std::vector<uint16_t> values, std::vector<int64_t> shape) {
    return owned_values(&OwnedTensor::bf16, std::move(values), shape, ATTNGEN_BFLOAT16);
}

namespace {
// Calls visit(flat, offset) for the elements of rows [row_begin, row_end) of t, a row being a run along
// its innermost dimension (rank >= 1, no empty dimension): flat is the row-major index, offset the
// element offset by `strides`. A run of stride 1 takes a loop the compiler can vectorize.
template <typename Visit>
void visit_rows(const attngen_tensor &t, const std::vector<int64_t> &strides, int64_t row_begin, int64_t row_end,
                Visit &visit) {
    const int last = t.rank - 1;
    const int64_t run = t.shape[last], run_stride = strides[last];
    std::vector<int64_t> index(size_t(last), 0);
    for (int64_t rest = row_begin, d = last - 1; d >= 0; d--) {
        index[size_t(d)] = rest % t.shape[d];
        rest /= t.shape[d];
    }
    for (int64_t row = row_begin; row < row_end; row++) {
        int64_t base = 0;
        for (int d = 0; d < last; d++)
            base += index[size_t(d)] * strides[d];
        const int64_t flat = row * run;
        if (run_stride == 1) {
            for (int64_t k = 0; k < run; k++)
                visit(flat + k, base + k);
        } else {
            for (int64_t k = 0; k < run; k++)
                visit(flat + k, base + k * run_stride);
        }
        for (int d = last - 1; d >= 0; d--) {
            if (++index[size_t(d)] < t.shape[d]) break;
            index[size_t(d)] = 0;
        }
    }
}

// Visits every element offset (in elements) of a tensor in row-major order.
template <typename Visit>
void for_each_offset(const attngen_tensor &t, const std::vector<int64_t> &strides, Visit &&visit) {
    if (element_count(t) == 0) return;
    if (t.rank == 0) {
        visit(int64_t(0), int64_t(0));
        return;
    }
    visit_rows(t, strides, 0, element_count(t) / t.shape[t.rank - 1], visit);
}

// for_each_offset for copies and conversions, where visit touches its own element only: tensors from
// kParallelScanBytes (counted in `element_bytes`) take both cores, in pieces of rows (a KV cache rotated
// whole, in place or in bfloat16; a long sequence's Transformer-XL table rounded per call).
template <typename Visit>
void for_each_offset_parallel(const attngen_tensor &t, const std::vector<int64_t> &strides, int64_t element_bytes,
                              Visit &&visit) {
    const int64_t count = element_count(t);
    const int64_t rows = t.rank > 0 && count > 0 ? count / t.shape[t.rank - 1] : 0;
    if (count * element_bytes < kParallelScanBytes || rows < kScanPieces) {
        for_each_offset(t, strides, visit);
        return;
    }
    struct Job {
        const attngen_tensor *tensor;
        const std::vector<int64_t> *strides;
        std::remove_reference_t<Visit> *visit;
        int64_t rows;
    } job{&t, &strides, &visit, rows};
    halide_task_t piece = [](void *, int number, uint8_t *closure) -> int {
        auto *job = reinterpret_cast<Job *>(closure);
        visit_rows(*job->tensor, *job->strides, job->rows * number / kScanPieces,
                   job->rows * (number + 1) / kScanPieces, *job->visit);
        return 0;
    };
    halide_do_par_for(nullptr, piece, 0, kScanPieces, reinterpret_cast<uint8_t *>(&job));
}
}  // namespace

OwnedTensor dense_copy_f32(const attngen_tensor &t) {
    std::vector<float> values(size_t(element_count(t)));
    const auto *data = static_cast<const float *>(t.data);
    for_each_offset_parallel(t, strides_of(t), sizeof(float),
                             [&](int64_t flat, int64_t offset) { values[size_t(flat)] = data[offset]; });
    return owned_f32(std::move(values), std::vector<int64_t>(t.shape, t.shape + t.rank));
}

OwnedTensor rounded_bf16_copy(const attngen_tensor &t) {
    std::vector<uint16_t> values(static_cast<size_t>(element_count(t)));
    const auto *data = static_cast<const float *>(t.data);
    for_each_offset_parallel(t, strides_of(t), sizeof(float),
                             [&](int64_t flat, int64_t offset) { values[size_t(flat)] = round_to_bf16(data[offset]); });
    return owned_bf16(std::move(values), std::vector<int64_t>(t.shape, t.shape + t.rank));
}

void widen_bf16_into(const attngen_tensor &t, float *dense) {
    const auto *data = static_cast<const uint16_t *>(t.data);
    for_each_offset_parallel(t, strides_of(t), sizeof(uint16_t),
                             [&](int64_t flat, int64_t offset) { dense[flat] = widen_bf16(data[offset]); });
}

void store_rounded_bf16(const attngen_tensor &dense, const attngen_tensor &out) {
    const auto *values = static_cast<const float *>(dense.data);
    auto *data = static_cast<uint16_t *>(out.data);
    for_each_offset_parallel(out, strides_of(out), sizeof(float),
                             [&](int64_t flat, int64_t offset) { data[offset] = round_to_bf16(values[flat]); });
}

void fill_zero(const attngen_tensor &t) {
    auto *bytes = static_cast<uint8_t *>(t.data);
    const size_t size = element_size(t.dtype);
    for_each_offset(t, strides_of(t), [&](int64_t, int64_t offset) { std::memset(bytes + offset * size, 0, size); });
}

HalideView::HalideView(const attngen_tensor &t, bool is_output, const std::string &name)
    : tensor_(t), is_output_(is_output) {
    std::vector<int64_t> strides = strides_of(t);
    const int rank = t.rank;
    const bool needs_packing = rank > 0 && t.shape[rank - 1] > 1 && strides[rank - 1] != 1;
    uint8_t *host = static_cast<uint8_t *>(t.data);
    const size_t size = element_size(t.dtype);
    if (needs_packing) {
        packed_.resize(std::max<int64_t>(element_count(t), 1) * size);
        if (!is_output_) {
            const auto *src = static_cast<const uint8_t *>(t.data);
            for_each_offset(t, strides, [&](int64_t flat, int64_t offset) {
                std::memcpy(&packed_[flat * size], src + offset * size, size);
            });
        }
        host = packed_.data();
        int64_t stride = 1;
        for (int d = rank - 1; d >= 0; d--) {
            strides[d] = stride;
            stride *= std::max<int64_t>(t.shape[d], 1);
        }
    }
    dims_.resize(std::max(rank, 1));
    for (int k = 0; k < rank; k++) {
        const int d = rank - 1 - k;
        dims_[k] = halide_dimension_t(0, int32_t(t.shape[d]), int32_t(strides[d]));
    }
    buffer_.host = host;
    // Inputs are valid on the host: device kernels must copy them over.
    if (!is_output_) buffer_.set_host_dirty(true);
    buffer_.dimensions = rank;
    buffer_.dim = dims_.data();
    buffer_.type = t.dtype == ATTNGEN_FLOAT32    ? halide_type_t(halide_type_float, 32)
                   : t.dtype == ATTNGEN_BFLOAT16 ? halide_type_t(halide_type_bfloat, 16)
                                                 : halide_type_t(halide_type_int, 32);
    (void)name;
}

void HalideView::finish() {
    if (buffer_.device) {
        if (is_output_) {
            int result = halide_copy_to_host(nullptr, &buffer_);
            if (result != 0) fail(ATTNGEN_ERROR_KERNEL_FAILED, "copying the output back from the device failed");
        }
        halide_device_free(nullptr, &buffer_);
    }
    if (is_output_ && !packed_.empty()) {
        const size_t size = element_size(tensor_.dtype);
        auto *dst = static_cast<uint8_t *>(tensor_.data);
        for_each_offset(tensor_, strides_of(tensor_), [&](int64_t flat, int64_t offset) {
            std::memcpy(dst + offset * size, &packed_[flat * size], size);
        });
    }
}

HalideView::~HalideView() {
    if (buffer_.device) halide_device_free(nullptr, &buffer_);
}

}  // namespace attngen::detail
