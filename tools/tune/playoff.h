// The autotuner's playoff verdict: which of its finalists, measured round-robin, replaces the incumbent.
//
// On a shared 2-core host the machine's speed drifts between rounds by more than the candidates differ
// (one Intel Xeon: a finalist's rounds spread from 167 to 207 GFLOP/s), so comparing medians of rounds
// let drift pick winners that a same-process A/B then measured at 1.01-1.18x the incumbent's time.
// Each round's figures are compared within the round instead (paired), against the incumbent: the entry
// a re-run would replace, else the hand schedule. A challenger takes over only when it is clearly and
// consistently faster.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace attngen::tune {

struct PlayoffVerdict {
    std::size_t winner = 0;
    // Per finalist: the median over rounds of its rate / the incumbent's in the same round (1 for the
    // incumbent, 0 where it failed a round), and the rounds in which it was faster.
    std::vector<double> median_ratio;
    std::vector<int> rounds_won;
};

inline double median_of(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// rates[n][round]: finalist n's rate in each round (0: it failed that round). A challenger wins over
// `incumbent` when it ran in every round, its median paired ratio is at least 1 + min_gain, and it was
// faster in more than half of the rounds; among such challengers the highest median ratio wins.
inline PlayoffVerdict decide_playoff(const std::vector<std::vector<double>> &rates, std::size_t incumbent,
                                     double min_gain) {
    PlayoffVerdict verdict;
    verdict.winner = incumbent;
    verdict.median_ratio.assign(rates.size(), 0.0);
    verdict.rounds_won.assign(rates.size(), 0);
    if (incumbent >= rates.size()) return verdict;
    verdict.median_ratio[incumbent] = 1.0;
    const std::vector<double> &base = rates[incumbent];
    double best_ratio = 1.0 + min_gain;
    for (std::size_t n = 0; n < rates.size(); n++) {
        if (n == incumbent) continue;
        const std::vector<double> &challenger = rates[n];
        const std::size_t rounds = std::min(challenger.size(), base.size());
        bool ran_every_round = rounds > 0 && challenger.size() == base.size();
        std::vector<double> ratios;
        for (std::size_t k = 0; k < rounds; k++) {
            if (!(challenger[k] > 0)) {
                ran_every_round = false;
                break;
            }
            // The incumbent failing a round counts as the challenger's win.
            const double ratio = base[k] > 0 ? challenger[k] / base[k] : std::numeric_limits<double>::infinity();
            ratios.push_back(ratio);
            if (ratio > 1.0) verdict.rounds_won[n]++;
        }
        if (!ran_every_round) continue;
        verdict.median_ratio[n] = median_of(ratios);
        const bool consistent = 2 * verdict.rounds_won[n] > int(rounds);
        if (consistent && verdict.median_ratio[n] >= best_ratio) {
            best_ratio = verdict.median_ratio[n];
            verdict.winner = n;
        }
    }
    return verdict;
}

}  // namespace attngen::tune
