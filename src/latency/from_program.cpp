#include "latency/from_program.h"

namespace dlakit::latency {
namespace {

Engine engine_of(prog::Engine e) {
  switch (e) {
    case prog::Engine::kConv:
      return Engine::kConv;
    case prog::Engine::kSdp:
      return Engine::kSdp;
    case prog::Engine::kPdp:
      return Engine::kPdp;
    case prog::Engine::kCdp:
      return Engine::kCdp;
    case prog::Engine::kRubik:
      return Engine::kRubik;
    case prog::Engine::kBdma:
      return Engine::kBdma;
  }
  return Engine::kSdp;
}

Dims dims_of(const rt::TensorDesc& d) { return {int64_t(d.n), int64_t(d.c), int64_t(d.h), int64_t(d.w)}; }

// Kernel, stride, dilation and groups of the operation's first layer (a convolution or a pool).
void window(const prog::Step& s, const prog::Program& p, HwOp& op) {
  Node n;
  n.attrs = s.attrs;
  if (s.op == OpKind::Gemm || s.op == OpKind::MatMul) return;  // a 1x1 convolution
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape", {});
  if (kernel.empty() && s.inputs.size() > 1 && s.inputs[1].kind == prog::Ref::Kind::kConstant) {
    const Shape& w = p.constants[s.inputs[1].index].shape;
    if (w.size() == 4) kernel = {w[2], w[3]};
  }
  if (kernel.empty()) kernel = {op.input.h, op.input.w};  // global pooling
  const auto strides = n.attr_ints("strides", s.op == OpKind::Conv ? std::vector<int64_t>{1, 1} : kernel);
  const auto dilations = n.attr_ints("dilations", {1, 1});
  op.kernel_h = int(kernel[0]), op.kernel_w = int(kernel.size() > 1 ? kernel[1] : 1);
  op.stride_h = int(strides[0]), op.stride_w = int(strides.size() > 1 ? strides[1] : 1);
  op.dilation_h = int(dilations[0]), op.dilation_w = int(dilations.size() > 1 ? dilations[1] : 1);
  op.groups = int(n.attr_int("group", 1));
  if (s.op == OpKind::ConvTranspose && s.inputs.size() > 1 &&
      s.inputs[1].kind == prog::Ref::Kind::kConstant) {
    // As the graph producer: a deconvolution runs as a convolution to C_out x kh x kw channels at the
    // input's resolution (open NVDLA), contracted by RUBIK on the way out.
    const Shape& w = p.constants[s.inputs[1].index].shape;
    op.output = {op.input.n, w[1] * op.kernel_h * op.kernel_w, op.input.h, op.input.w};
    op.kernel_h = op.kernel_w = op.stride_h = op.stride_w = op.dilation_h = op.dilation_w = 1;
    op.groups = 1;
  }
}

}  // namespace

std::vector<HwOp> hw_ops(const prog::Program& p) {
  std::vector<HwOp> ops;
  for (const prog::Op& o : p.ops) {
    HwOp op;
    op.engine = engine_of(o.engine);
    op.precision = o.steps.front().rules.precision == numerics::Precision::kInt8 ? OpPrecision::kInt8
                                                                                 : OpPrecision::kFp16;
    if (!o.reads.empty()) op.input = dims_of(p.surfaces[o.reads.front()].desc);
    op.output = o.writes.empty() ? op.input : dims_of(p.surfaces[o.writes.back()].desc);
    if (o.reads.empty()) op.input = op.output;
    op.macs = int64_t(o.macs);
    op.weight_bytes = int64_t(o.weight_bytes);
    for (uint32_t s : o.reads) {
      const prog::Surface& sf = p.surfaces[s];
      (sf.pool == prog::Pool::kSram ? op.sram_read : op.dram_read) += int64_t(sf.bytes);
      op.image_input = op.image_input || sf.desc.format == rt::IoFormat::kDlaHwc4;
    }
    for (uint32_t s : o.writes) {
      const prog::Surface& sf = p.surfaces[s];
      (sf.pool == prog::Pool::kSram ? op.sram_written : op.dram_written) += int64_t(sf.bytes);
    }
    for (const prog::Step& s : o.steps) {
      op.layers.push_back(s.layer);
      if (!op.fused.empty()) op.fused += '+';
      op.fused += op_name(s.op);
      op.lut = op.lut || s.op == OpKind::Sigmoid || s.op == OpKind::Tanh;
      if (s.op == OpKind::Softmax) op.element_passes = 3;  // as the graph producer (an assumption)
    }
    if (o.engine == prog::Engine::kConv || o.engine == prog::Engine::kPdp) window(o.steps.front(), p, op);
    op.image_input = op.image_input && o.engine == prog::Engine::kConv;
    validate(op);
    ops.push_back(std::move(op));
  }
  return ops;
}

}  // namespace dlakit::latency
