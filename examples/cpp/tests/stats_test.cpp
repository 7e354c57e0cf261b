#include <gtest/gtest.h>

#include "stats/stats.h"

TEST(Mean, AveragesValues) {
    EXPECT_DOUBLE_EQ(stats::mean({1, 2, 3, 4}), 2.5);
}

TEST(Mean, IsZeroForNothing) {
    EXPECT_EQ(stats::mean({}), 0);
}

TEST(Median, OddCountIsTheMiddle) {
    EXPECT_DOUBLE_EQ(stats::median({3, 1, 2}), 2);
}

TEST(Median, EvenCountAveragesTheMiddleTwo) {
    EXPECT_DOUBLE_EQ(stats::median({4, 1, 3, 2}), 2.5);
}

TEST(Median, IsZeroForNothing) {
    EXPECT_EQ(stats::median({}), 0);
}
