// The autotuner's playoff verdict (tools/tune/playoff.h): paired against the incumbent, a margin and a
// majority of rounds.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "tune/playoff.h"

using attngen::tune::decide_playoff;

TEST_CASE("a challenger consistently 5 % faster replaces the incumbent, however the host drifts") {
    // The host's speed per round: a drift wider than the difference between the candidates.
    const std::vector<double> drift = {1.00, 0.80, 1.15, 0.90, 1.05};
    std::vector<std::vector<double>> rates(3);
    for (double f : drift) {
        rates[0].push_back(100 * f);  // the hand schedule
        rates[1].push_back(110 * f);  // the incumbent
        rates[2].push_back(115.5 * f);
    }
    const auto verdict = decide_playoff(rates, 1, 0.02);
    CHECK(verdict.winner == 2);
    CHECK(verdict.median_ratio[1] == 1.0);
    CHECK(verdict.median_ratio[2] == Approx(1.05));
    CHECK(verdict.rounds_won[2] == 5);
    CHECK(verdict.median_ratio[0] == Approx(100.0 / 110));
    CHECK(verdict.rounds_won[0] == 0);
}

TEST_CASE("drift between rounds does not pick a slower challenger whose median is higher") {
    // The challenger is 1 % slower in four rounds of five and 10 % faster in one: its median of rounds
    // (110) is above the incumbent's (100), its median ratio to the incumbent is 0.99.
    const std::vector<std::vector<double>> rates = {{90, 100, 100, 120, 125}, {89.1, 99, 110, 118.8, 123.75}};
    const auto verdict = decide_playoff(rates, 0, 0.02);
    CHECK(verdict.winner == 0);
    CHECK(verdict.median_ratio[1] == Approx(0.99));
    CHECK(verdict.rounds_won[1] == 1);
}

TEST_CASE("a gain under the margin, or in too few rounds, keeps the incumbent") {
    const auto small_gain = decide_playoff({{100, 100, 100}, {101.5, 101.5, 101.5}}, 0, 0.02);
    CHECK(small_gain.winner == 0);
    CHECK(small_gain.rounds_won[1] == 3);
    // Faster by 10 % in two rounds of five, slower in three: the median ratio is under 1.
    const auto few_rounds = decide_playoff({{100, 100, 100, 100, 100}, {110, 110, 97, 97, 97}}, 0, 0.02);
    CHECK(few_rounds.winner == 0);
    CHECK(few_rounds.median_ratio[1] == Approx(0.97));
    // Median ratio 1.03 but faster in only 2 of 4 rounds: not more than half.
    const auto half = decide_playoff({{100, 100, 100, 100}, {104, 104, 99, 99}}, 0, 0.02);
    CHECK(half.median_ratio[1] == Approx(1.015));
    CHECK(half.winner == 0);
    const auto majority = decide_playoff({{100, 100, 100, 100}, {104, 104, 104, 99}}, 0, 0.02);
    CHECK(majority.winner == 1);
}

TEST_CASE("the best of several qualifying challengers wins; one that failed a round cannot") {
    const std::vector<std::vector<double>> rates = {{100, 100, 100}, {103, 103, 103}, {108, 0, 108}, {106, 106, 105}};
    const auto verdict = decide_playoff(rates, 0, 0.02);
    CHECK(verdict.winner == 3);
    CHECK(verdict.median_ratio[2] == 0.0);
    CHECK(verdict.median_ratio[3] == Approx(1.06));
}

TEST_CASE("an incumbent that fails a round loses that round") {
    const auto verdict = decide_playoff({{100, 0, 100}, {103, 50, 103}}, 0, 0.02);
    CHECK(verdict.winner == 1);
    CHECK(verdict.rounds_won[1] == 3);
}
