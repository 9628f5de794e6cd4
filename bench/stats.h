// Order statistics for latency samples and for the spread of repeated runs.
#pragma once

#include <vector>

namespace madeira::bench {

// Nearest-rank percentile, p in [0, 100]; sorts `samples`. 0 when there are none.
double Percentile(std::vector<double>& samples, double p);

// The middle value (mean of the two middle ones for an even count); 0 when empty.
double Median(std::vector<double> values);

}  // namespace madeira::bench
