#include <gtest/gtest.h>
#include "calc.h"
TEST(Calc, Adds) { EXPECT_EQ(add(2, 3), 5); }
TEST(Calc, Multiplies) { EXPECT_EQ(mul(2, 3), 6); }
TEST(Calc, AddsNegative) { ASSERT_EQ(add(-1, -1), -2) << "negative sum"; }
