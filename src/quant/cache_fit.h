// A calibration cache against the network it is used with. TensorRT calibrates before fusing layers, so a
// real cache names tensors that dlakit's passes fold away (a Conv output before its fused activation or
// batch norm); it also names TensorRT's own tensors ("(Unnamed Layer* 12) [Shuffle]_output"). Every entry
// is sorted into one of:
//   kept      a tensor of the network after dlakit's passes: its scale is used
//   mapped    a tensor the passes removed as an alias (Identity, Dropout) of a kept tensor that has no
//             scale of its own: the kept tensor takes it
//   folded    any other tensor of the imported model the passes removed: ignored, as TensorRT's fusions
//             ignore the scale of a fused intermediate
//   internal  TensorRT's own tensors: ignored
//   unknown   none of these (a warning naming them)
// A cache none of whose names is a tensor of the network, or with more than 90 % of them unknown, is an
// error; one that gives ranges to fewer than half of the network's activations is a warning naming some of
// those left without (their layers run FP16).
// A scale of 0 on a kept tensor would make an all-zero layer: the entry is dropped (its layers stay FP16)
// with a warning naming it. A header of another algorithm than EntropyCalibration2 is a warning (TensorRT
// takes only EntropyCalibration2 caches for the DLA, dla-constraints.md §4.3).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/calib_cache.h"

namespace dlakit::quant {

struct CacheFit {
  ScaleTable scales;  // what the network uses: kept and mapped entries with a scale > 0
  std::vector<std::string> kept, folded, internal, unknown, zero;
  std::vector<std::pair<std::string, std::string>> mapped;  // (cache name, the kept tensor it went to)
  std::vector<std::string> warnings;                        // one line each, for the user
};

// `kept`: the network after dlakit's passes; `imported`: the same model before them. Throws a clear
// error when the cache does not fit the model at all.
CacheFit fit_cache(const ScaleTable& cache, const Graph& kept, const Graph& imported,
                   const std::string& source = "calibration cache");

// "a, b, c and 12 more": the first few names of a list, for messages.
std::string first_names(const std::vector<std::string>& names, size_t shown = 3);

}  // namespace dlakit::quant
