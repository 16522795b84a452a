#include "positional_schedules.h"

namespace attngen {

using namespace Halide;

namespace {
const TailStrategy kGuard = TailStrategy::GuardWithIf;

int vector_lanes(const Target &target) {
    return target.has_feature(Target::AVX512) ? 16 : 8;
}
}  // namespace

void schedule_rotation(Func out, const std::vector<Func> &tables, const Target &target) {
    std::vector<Var> args = out.args();  // d, n, h, b
    Var rows("rows"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    if (target.has_gpu_feature()) {
        out.gpu_tile(args[0], args[1], xo, yo, xi, yi, 32, 4, kGuard);
        for (Func table : tables)
            table.compute_root().gpu_tile(table.args()[0], table.args()[1], xo, yo, xi, yi, 32, 4, kGuard);
        return;
    }
    const int lanes = vector_lanes(target);
    out.fuse(args[2], args[3], rows).parallel(rows).vectorize(args[0], lanes, kGuard);
    for (Func table : tables) {
        std::vector<Var> t = table.args();  // f, n, b
        table.compute_root().parallel(t[2]).vectorize(t[0], lanes, kGuard);
    }
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
