#include "positional_schedules.h"

namespace attngen {

using namespace Halide;

namespace {
const TailStrategy kGuard = TailStrategy::GuardWithIf;
constexpr int kTablePositionsPerTask = 64;

int vector_lanes(const Target &target) {
    return target.has_feature(Target::AVX512) ? 16 : 8;
}
}  // namespace

void schedule_position_table(Func table) {
    std::vector<Var> args = table.args();  // x, position, batch
    Var position_block("position_block"), blocks("blocks");
    table.compute_root()
        .split(args[1], position_block, args[1], kTablePositionsPerTask, kGuard)
        .fuse(position_block, args[2], blocks)
        .parallel(blocks);
}

void schedule_rotation(Func out, Func cos_sin, const std::vector<Func> &per_frequency, const Target &target) {
    std::vector<Var> args = out.args();       // d, n, h, b
    std::vector<Var> table = cos_sin.args();  // f, n, b
    Var rows("rows"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    if (target.has_gpu_feature()) {
        // Per-frequency values stay inline: a GPU's pow and log are instructions, not library calls.
        out.gpu_tile(args[0], args[1], xo, yo, xi, yi, 32, 4, kGuard);
        cos_sin.compute_root().gpu_tile(table[0], table[1], xo, yo, xi, yi, 32, 4, kGuard);
        return;
    }
    const int lanes = vector_lanes(target);
    out.fuse(args[2], args[3], rows).parallel(rows).vectorize(args[0], lanes, kGuard);
    for (Func values : per_frequency)
        values.compute_root().vectorize(values.args()[0], lanes, kGuard);
    schedule_position_table(cos_sin);
    cos_sin.vectorize(table[0], lanes, kGuard);
}

void schedule_table(Func out, const Target &target) {
    std::vector<Var> args = out.args();
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    if (target.has_gpu_feature()) {
        out.gpu_tile(args[0], args[1], xo, yo, xi, yi, 32, 4, kGuard);
        return;
    }
    Var rows("rows");
    out.split(args[1], rows, args[1], 16, kGuard).parallel(rows).vectorize(args[0], vector_lanes(target) / 2, kGuard);
}

void schedule_embedding(Func out, const Target &target) {
    std::vector<Var> args = out.args();  // c, n, b
    Var rows("rows"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    if (target.has_gpu_feature()) {
        out.gpu_tile(args[0], args[1], xo, yo, xi, yi, 32, 4, kGuard);
        return;
    }
    Var row_blocks("row_blocks");
    out.fuse(args[1], args[2], rows)
        .split(rows, row_blocks, rows, 8, kGuard)
        .parallel(row_blocks)
        .vectorize(args[0], vector_lanes(target), kGuard);
}

}  // namespace attngen
