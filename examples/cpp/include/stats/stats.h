#pragma once

#include <vector>

namespace stats {

// mean is the arithmetic mean of values; 0 for none.
double mean(const std::vector<double> &values);

// median is the middle of the sorted values, or the mean of the two
// middle ones when their number is even; 0 for none.
double median(std::vector<double> values);

}  // namespace stats
