// Values where quantization's rounding of ties shows: x = (k + 0.5) * scale as floats round it, for k from
// `first` to `last` in steps of `step`, each with its three float neighbours below and three above.
#pragma once
#include <cmath>
#include <vector>

namespace dlakit::test_data {

inline std::vector<float> ties_and_neighbours(float scale, int first, int last, int step = 1) {
  std::vector<float> v;
  for (int k = first; k <= last; k += step) {
    float x = (float(k) + 0.5f) * scale;
    for (int below = 0; below < 3; ++below) x = std::nextafter(x, -INFINITY);
    for (int i = 0; i < 7; ++i, x = std::nextafter(x, INFINITY)) v.push_back(x);
  }
  return v;
}

}  // namespace dlakit::test_data
