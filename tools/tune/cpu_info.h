// The CPU as /proc/cpuinfo's first processor describes it (Linux; the fields stay empty elsewhere). A VM's
// model name may not tell generations apart ("AMD EPYC" for Zen 4 and Zen 5, whose AVX-512 FMA rates differ);
// its family and model do (AMD family 25 model 17 is Zen 4, family 26 is Zen 5). The autotuner records it in
// each entry, the benchmark in its results.
#pragma once

#include <fstream>
#include <string>

namespace attngen::tune {

struct CpuInfo {
    std::string vendor, model_name, family, model;  // as /proc/cpuinfo writes them; empty if absent
};

inline CpuInfo read_cpu_info() {
    CpuInfo info;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line) && !line.empty()) {  // a blank line ends the first processor's block
        const size_t colon = line.find(':');
        if (colon == std::string::npos || colon == 0) continue;
        const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
        const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : std::string();
        if (key == "vendor_id") info.vendor = value;
        if (key == "model name") info.model_name = value;
        if (key == "cpu family") info.family = value;
        if (key == "model") info.model = value;
    }
    return info;
}

}  // namespace attngen::tune
