#include "loadable/loadable.h"

#include "compiler/lower.h"
#include "program/format.h"

namespace dlakit {

prog::Program compile_program(const Graph& g, const LoadableOptions& opt) {
  if (opt.int8 && (!opt.plan || opt.plan->nodes.size() != g.nodes.size()))
    fail(Status::kInvalidArgument,
         "an INT8 loadable needs the numerics plan of its graph (calibration scales)");
  compiler::LowerOptions lo;
  lo.target = opt.target;
  lo.int8 = opt.int8;
  lo.dla_core = opt.dla_core;
  lo.inputs = opt.inputs;
  lo.outputs = opt.outputs;
  lo.pools = opt.pools;
  prog::Program p =
      compiler::lower(g, opt.int8 ? *opt.plan : quant::plan_uniform(g, quant::Mode::kFP16, nullptr), lo);
  prog::verify(p, "compiled program");
  return p;
}

std::string write_loadable(const Graph& g, const LoadableOptions& opt) {
  return prog::serialize(compile_program(g, opt));
}

}  // namespace dlakit
