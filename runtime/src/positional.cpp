// Positional functions of the references, and the standalone positional kernels' front-ends.
// Float32 where the reference computes in float32: HF RoPE frequencies, T5 and DeBERTa log
// buckets (their float rounding decides integer boundaries).
#include "internal.h"

#include <algorithm>
#include <cmath>

namespace attngen::detail {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

std::vector<double> alibi_slopes(int heads) {
    // get_slopes(n) of the ALiBi authors: 2^(-8(h+1)/n) for powers of two; otherwise the slopes of
    // the closest smaller power of two c, then every other slope of 2c.
    auto power_of_two_slopes = [](int n) {
        const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(double(n)) - 3)));
        std::vector<double> slopes(n);
        for (int h = 0; h < n; h++)
            slopes[h] = start * std::pow(start, double(h));
        return slopes;
    };
    if ((heads & (heads - 1)) == 0) return power_of_two_slopes(heads);
    const int closest = 1 << int(std::floor(std::log2(double(heads))));
    std::vector<double> slopes = power_of_two_slopes(closest);
    std::vector<double> extra = power_of_two_slopes(2 * closest);
    for (int n = 0; n < heads - closest; n++)
        slopes.push_back(extra[2 * n]);
    return slopes;
}

float t5_log_span(bool bidirectional, int num_buckets, int max_distance) {
    const int max_exact = (bidirectional ? num_buckets / 2 : num_buckets) / 2;
    return float(std::log(double(max_distance) / double(max_exact)));
}

float deberta_log_span(int bucket_size, int max_position) {
    return float(std::log(double(max_position - 1) / double(bucket_size / 2)));
}

namespace {

int t5_bucket_value(int relative, bool bidirectional, int num_buckets, int max_distance) {
    int buckets = num_buckets, offset = 0, distance;
    if (bidirectional) {
        buckets /= 2;
        if (relative > 0) offset = buckets;
        distance = relative < 0 ? -relative : relative;
    } else {
        distance = relative < 0 ? -relative : 0;
    }
    const int max_exact = buckets / 2;
    if (distance < max_exact) return offset + distance;
    const float log_span = t5_log_span(bidirectional, num_buckets, max_distance);
    const float ratio = float(distance) / float(max_exact);
    int large = max_exact + int(std::log(ratio) / log_span * float(buckets - max_exact));
    if (large > buckets - 1) large = buckets - 1;
    return offset + large;
}

int deberta_bucket_value(int relative, int bucket_size, int max_position) {
    int rel = relative;
    if (rel < 1 - max_position) rel = 1 - max_position;
    if (rel > max_position - 1) rel = max_position - 1;
    const int mid = bucket_size / 2;
    const int magnitude = (rel < mid && rel > -mid) ? mid - 1 : (rel < 0 ? -rel : rel);
    if (magnitude <= mid) return rel;
    const float log_span = deberta_log_span(bucket_size, max_position);
    const float scaled = std::log(float(magnitude) / float(mid)) / log_span * float(mid - 1);
    const int log_pos = int(std::ceil(scaled)) + mid;
    return rel > 0 ? log_pos : (rel < 0 ? -log_pos : 0);
}

void check_t5_params(bool bidirectional, int num_buckets, int max_distance) {
    if (num_buckets < 2 || num_buckets % 2 != 0) {
        invalid("t5: num_buckets is " + std::to_string(num_buckets) + ", expected an even number >= 2");
    }
    // Buckets below max_exact are exact distances; the log branch needs max_distance beyond them.
    const int max_exact = std::max((bidirectional ? num_buckets / 2 : num_buckets) / 2, 1);
    if (max_distance <= max_exact) {
        invalid("t5: max_distance is " + std::to_string(max_distance) + ", expected > " + std::to_string(max_exact) +
                " (the exact-bucket range of " + (bidirectional ? "bidirectional" : "unidirectional") +
                " buckets for num_buckets " + std::to_string(num_buckets) + ")");
    }
}

void check_deberta_bucket_params(int bucket_size, int max_position) {
    if (bucket_size < 2) invalid("deberta: bucket_size is " + std::to_string(bucket_size) + ", expected >= 2");
    if (max_position - 1 <= bucket_size / 2) {
        invalid("deberta: max_position is " + std::to_string(max_position) +
                ", expected > bucket_size/2 + 1 = " + std::to_string(bucket_size / 2 + 1));
    }
}

}  // namespace

void check_rope_params(const attngen_rope_params &rope, int head_dim) {
    if (rope.pairing != ATTNGEN_ROPE_HALF && rope.pairing != ATTNGEN_ROPE_INTERLEAVED) {
        invalid("rope: pairing is " + std::to_string(int(rope.pairing)) + ", expected 0 (half) or 1 (interleaved)");
    }
    const int rot_dim = rope.rot_dim == 0 ? head_dim : rope.rot_dim;
    if (rot_dim < 2 || rot_dim % 2 != 0 || rot_dim > head_dim) {
        invalid("rope: rot_dim is " + std::to_string(rot_dim) + ", expected an even number in 2.." +
                std::to_string(head_dim) + " (head_dim)");
    }
    if (is_present(&rope.inv_freq)) {
        check_tensor(&rope.inv_freq, "rope.inv_freq", ATTNGEN_FLOAT32, {"rot_dim/2"}, {rot_dim / 2});
        check_finite(rope.inv_freq, "rope.inv_freq");
        return;
    }
    check_finite(rope.base, "rope.base");
    if (rope.base <= 0) invalid("rope: base is " + std::to_string(rope.base) + ", expected > 0");
    switch (rope.scaling) {
        case ATTNGEN_ROPE_SCALING_NONE:
            break;
        case ATTNGEN_ROPE_SCALING_LINEAR:
        case ATTNGEN_ROPE_SCALING_DYNAMIC_NTK:
        case ATTNGEN_ROPE_SCALING_LLAMA3:
        case ATTNGEN_ROPE_SCALING_YARN:
            check_finite(rope.factor, "rope.factor");
            if (rope.factor <= 0) invalid("rope: scaling factor is " + std::to_string(rope.factor) + ", expected > 0");
            break;
        default:
            invalid("rope: scaling is " + std::to_string(int(rope.scaling)) + ", expected 0..4");
    }
    if (rope.scaling == ATTNGEN_ROPE_SCALING_DYNAMIC_NTK && rope.max_position_embeddings <= 0) {
        invalid("rope: dynamic NTK needs max_position_embeddings > 0");
    }
    if (rope.scaling == ATTNGEN_ROPE_SCALING_DYNAMIC_NTK && rot_dim <= 2) {
        // Its base grows by (...)^(rot_dim / (rot_dim - 2)): infinite for one pair of channels.
        invalid("rope: dynamic NTK needs rot_dim > 2, got " + std::to_string(rot_dim));
    }
    if (rope.scaling == ATTNGEN_ROPE_SCALING_LLAMA3) {
        check_finite(rope.low_freq_factor, "rope.low_freq_factor");
        check_finite(rope.high_freq_factor, "rope.high_freq_factor");
        if (rope.low_freq_factor <= 0 || rope.high_freq_factor <= rope.low_freq_factor) {
            invalid("rope: llama3 needs 0 < low_freq_factor < high_freq_factor");
        }
        if (rope.original_max_position_embeddings <= 0)
            invalid("rope: llama3 needs original_max_position_embeddings > 0");
    }
    if (rope.scaling == ATTNGEN_ROPE_SCALING_YARN) {
        if (rope.original_max_position_embeddings <= 0)
            invalid("rope: yarn needs original_max_position_embeddings > 0");
        check_finite(rope.beta_fast, "rope.beta_fast");
        check_finite(rope.beta_slow, "rope.beta_slow");
        check_finite(rope.attention_factor, "rope.attention_factor");
    }
}

// Inverse frequencies as Hugging Face computes them (float32 tensor arithmetic), then scaled.
RopeFrequencies rope_frequencies(const attngen_rope_params &rope, int head_dim, int seq_len) {
    const int rot_dim = rope.rot_dim == 0 ? head_dim : rope.rot_dim;
    const int pairs = rot_dim / 2;
    RopeFrequencies result;
    result.inv_freq.resize(pairs);
    if (is_present(&rope.inv_freq)) {
        const float *given = static_cast<const float *>(rope.inv_freq.data);
        const int64_t stride = strides_of(rope.inv_freq)[0];
        for (int f = 0; f < pairs; f++)
            result.inv_freq[f] = given[f * stride];
        return result;
    }
    double base = rope.base;
    if (rope.scaling == ATTNGEN_ROPE_SCALING_DYNAMIC_NTK && seq_len > rope.max_position_embeddings) {
        base *= std::pow(rope.factor * seq_len / rope.max_position_embeddings - (rope.factor - 1),
                         double(rot_dim) / (rot_dim - 2));
    }
    const float base_f = float(base);
    for (int f = 0; f < pairs; f++) {
        const float exponent = float(2 * f) / float(rot_dim);
        result.inv_freq[f] = 1.0f / std::pow(base_f, exponent);
    }
    const float factor = float(rope.factor);
    switch (rope.scaling) {
        case ATTNGEN_ROPE_SCALING_LINEAR:
            for (float &f : result.inv_freq)
                f /= factor;
            break;
        case ATTNGEN_ROPE_SCALING_LLAMA3: {
            const float old_context = float(rope.original_max_position_embeddings);
            const float low_wavelen = float(double(rope.original_max_position_embeddings) / rope.low_freq_factor);
            const float high_wavelen = float(double(rope.original_max_position_embeddings) / rope.high_freq_factor);
            for (float &f : result.inv_freq) {
                const float wavelen = float(2 * kPi) / f;
                float scaled = wavelen > low_wavelen ? f / factor : f;
                const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
                if (medium) {
                    const float smooth = (old_context / wavelen - float(rope.low_freq_factor)) /
                                         float(rope.high_freq_factor - rope.low_freq_factor);
                    scaled = (1 - smooth) * scaled / factor + smooth * scaled;
                }
                f = scaled;
            }
            break;
        }
        case ATTNGEN_ROPE_SCALING_YARN: {
            const double beta_fast = rope.beta_fast == 0 ? 32.0 : rope.beta_fast;
            const double beta_slow = rope.beta_slow == 0 ? 1.0 : rope.beta_slow;
            const double context = rope.original_max_position_embeddings;
            auto correction_dim = [&](double rotations) {
                return (rot_dim * std::log(context / (rotations * 2 * kPi))) / (2 * std::log(base));
            };
            const double low = std::max(std::floor(correction_dim(beta_fast)), 0.0);
            double high = std::min(std::ceil(correction_dim(beta_slow)), double(rot_dim - 1));
            if (low == high) high += 0.001;
            for (int f = 0; f < pairs; f++) {
                const float pos_freq = std::pow(base_f, float(2 * f) / float(rot_dim));
                const float extrapolation = 1.0f / pos_freq, interpolation = 1.0f / (factor * pos_freq);
                const float ramp = float(std::min(std::max((f - low) / (high - low), 0.0), 1.0));
                const float keep = 1 - ramp;
                result.inv_freq[f] = interpolation * (1 - keep) + extrapolation * keep;
            }
            result.attention_factor =
                rope.attention_factor != 0 ? rope.attention_factor : 0.1 * std::log(rope.factor) + 1.0;
            break;
        }
        default:
            break;
    }
    return result;
}

}  // namespace attngen::detail

using namespace attngen::detail;

extern "C" {

attngen_status attngen_alibi_slopes(int32_t heads, double *slopes, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        if (heads < 1) invalid("alibi: heads is " + std::to_string(heads) + ", expected >= 1");
        if (!slopes) invalid("alibi: slopes output pointer is null");
        std::vector<double> values = alibi_slopes(heads);
        for (int h = 0; h < heads; h++)
            slopes[h] = values[h];
    });
}

attngen_status attngen_t5_bucket(int32_t relative_position, int32_t bidirectional, int32_t num_buckets,
                                 int32_t max_distance, int32_t *bucket, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        check_t5_params(bidirectional != 0, num_buckets, max_distance);
        if (!bucket) invalid("t5: bucket output pointer is null");
        *bucket = t5_bucket_value(relative_position, bidirectional != 0, num_buckets, max_distance);
    });
}

attngen_status attngen_deberta_bucket(int32_t relative_position, int32_t bucket_size, int32_t max_position,
                                      int32_t *bucket, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        check_deberta_bucket_params(bucket_size, max_position);
        if (!bucket) invalid("deberta: bucket output pointer is null");
        *bucket = deberta_bucket_value(relative_position, bucket_size, max_position);
    });
}

attngen_status attngen_rope_inv_freq(const attngen_rope_params *rope, int32_t head_dim, int32_t seq_len,
                                     float *inv_freq, double *attention_factor, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        if (!rope) invalid("rope: params pointer is null");
        if (head_dim < 2) invalid("rope: head_dim is " + std::to_string(head_dim) + ", expected >= 2");
        check_rope_params(*rope, head_dim);
        if (!inv_freq) invalid("rope: inv_freq output pointer is null");
        RopeFrequencies frequencies = rope_frequencies(*rope, head_dim, seq_len);
        for (size_t f = 0; f < frequencies.inv_freq.size(); f++)
            inv_freq[f] = frequencies.inv_freq[f];
        if (attention_factor) *attention_factor = frequencies.attention_factor;
    });
}

}  // extern "C"
