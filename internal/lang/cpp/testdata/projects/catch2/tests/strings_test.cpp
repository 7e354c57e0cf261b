#include <catch2/catch.hpp>
#include "strings.h"
TEST_CASE("shout upper-cases every letter") {
    REQUIRE(shout("hey") == "HEY!");
}
TEST_CASE("shout of nothing is a bang") {
    CHECK(shout("") == "!");
}
