#include "workflow/build.h"

#include "base/error.h"
#include "loadable/loadable.h"
#include "loadable/plan.h"

namespace dlakit::workflow {

quant::ScaleTable int8_scales(const quant::ScaleTable& qdq, const quant::ScaleTable* calib) {
  quant::ScaleTable scales = qdq;
  if (calib)
    for (auto& [n, s] : calib->scales) scales.set_scale(n, s);
  if (scales.scales.empty())
    fail(Status::kInvalidArgument,
         "--int8 needs ranges: --calib CACHE (from `dlakit calibrate` or TensorRT), --data to calibrate on, "
         "or a Q/DQ model");
  return scales;
}

BuiltEngine build_engine(const PlacedModel& pm, const BuildOptions& o) {
  const Graph& g = pm.graph;
  const Placement& p = pm.placement;
  BuiltEngine e;
  quant::ScaleTable scales;
  if (o.int8) scales = int8_scales(pm.qdq, o.calib);
  if (!p.options.standalone) {
    e.is_plan = true;
    e.bytes = write_plan(g, p, o.int8 ? &scales : nullptr, &e.int8_layers,
                         compiler::parse_mem_pool_sizes(o.mem_pool_sizes));
    return e;
  }
  if (o.int8) {
    e.numerics = quant::plan_numerics(g, p, &scales);
    e.int8_layers = e.numerics.int8_nodes;
  }
  LoadableOptions lo;
  lo.int8 = o.int8;
  lo.plan = o.int8 ? &e.numerics : nullptr;
  lo.target = p.options.target;
  lo.dla_core = p.options.dla_core;
  lo.inputs = rt::parse_io_formats(o.input_formats, g.inputs.size(), true);
  lo.outputs = rt::parse_io_formats(o.output_formats, g.outputs.size(), false);
  lo.pools = compiler::parse_mem_pool_sizes(o.mem_pool_sizes);
  e.bytes = write_loadable(g, lo);
  return e;
}

}  // namespace dlakit::workflow
