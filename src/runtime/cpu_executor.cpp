#include "runtime/cpu_executor.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>

#include "runtime/atom_ops.h"
#include "runtime/surface_io.h"

namespace dlakit::rt {

using prog::Pool;
using prog::Ref;

CpuExecutor::CpuExecutor(const PreparedProgram& p) : p_(p) {}

void CpuExecutor::run(const std::vector<const void*>& in, const std::vector<void*>& out,
                      const RunControl& control) const {
  std::lock_guard<std::mutex> lk(mu_);
  run_locked(in, out, nullptr, SIZE_MAX, control);
}

void CpuExecutor::run_prefix(const std::vector<const void*>& in, const std::vector<void*>& out,
                             size_t op_count) const {
  std::lock_guard<std::mutex> lk(mu_);
  run_locked(in, out, nullptr, op_count);
}

std::vector<uint8_t> CpuExecutor::arena(prog::Pool pool) const {
  std::lock_guard<std::mutex> lk(mu_);
  return pool == Pool::kSram ? sram_ : local_dram_;
}

std::vector<std::pair<std::string, double>> CpuExecutor::profile(const std::vector<const void*>& in,
                                                                 const std::vector<void*>& out) const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<std::pair<std::string, double>> times;
  run_locked(in, out, &times, SIZE_MAX);
  return times;
}

void CpuExecutor::run_locked(const std::vector<const void*>& in, const std::vector<void*>& out,
                             std::vector<std::pair<std::string, double>>* times, size_t op_count,
                             const RunControl& control) const {
  const prog::Program& p = p_.program();
  if (in.size() != p.inputs.size() || out.size() != p.outputs.size())
    fail(Status::kInvalidArgument, "program run with ", in.size(), " input and ", out.size(),
         " output buffers; it has ", p.inputs.size(), " and ", p.outputs.size());
  for (const void* b : in) DLAKIT_CHECK(b, Status::kInvalidArgument, "program run with a null input buffer");
  for (void* b : out) DLAKIT_CHECK(b, Status::kInvalidArgument, "program run with a null output buffer");
  sram_.resize(p.sram.used);
  local_dram_.resize(p.local_dram.used);
  // A run that may stop works on copies of the output buffers (operations write them, some read them
  // back, and not every byte is written) and copies them out only once it has completed.
  const bool staged = control.can_stop();
  std::vector<void*> dst = out;
  if (staged) {
    out_staging_.resize(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const size_t size = p.output_desc(i).size;
      out_staging_[i].assign(static_cast<const uint8_t*>(out[i]), static_cast<const uint8_t*>(out[i]) + size);
      dst[i] = out_staging_[i].data();
    }
  }
  auto base = [&](const prog::Surface& s) -> uint8_t* {
    switch (s.pool) {
      case Pool::kSram:
        return sram_.data() + s.offset;
      case Pool::kLocalDram:
        return local_dram_.data() + s.offset;
      case Pool::kInput:
        return static_cast<uint8_t*>(const_cast<void*>(in[s.io_index])) + s.offset;
      case Pool::kOutput:
        return static_cast<uint8_t*>(dst[s.io_index]) + s.offset;
      case Pool::kGlobalDram:
        break;
    }
    fail(Status::kInternal, "surface '", s.desc.name, "' is in the constants pool");
  };
  for (size_t oi = 0; oi < p.ops.size() && oi < op_count; ++oi) {
    const auto t0 = std::chrono::steady_clock::now();
    const prog::Op& op = p.ops[oi];
    control.check(op.steps[0].layer.c_str());
    auto record_time = [&] {
      if (times)
        times->push_back(
            {op.steps[0].layer,
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
    };
    if (const std::optional<AtomOp>& a = p_.atom_op(oi)) {
      run_int8_atoms(*a, base);
      record_time();
      continue;
    }
    std::vector<Tensor> temps;
    std::map<uint32_t, Tensor> loaded;  // surfaces this operation read
    for (size_t k = 0; k < op.steps.size(); ++k) {
      const prog::Step& s = op.steps[k];
      const PreparedStep& ps = p_.step(oi, k);
      std::vector<const Tensor*> ins(s.inputs.size(), nullptr);
      // Passes that change nothing are skipped (numerics::StepShortcuts): an exact INT8 convolution reading
      // an int8 surface at the scale it quantizes to takes its levels as they are; inputs read from int8
      // surfaces at their quantize scale are not fake-quantized again; outputs written to int8 surfaces at
      // their store scale are quantized once, by the write.
      numerics::InputLevels levels;
      numerics::StepShortcuts shortcuts;
      auto int8_surface_at = [&](const Ref& r, float scale) {
        return r.kind == Ref::Kind::kSurface && p.surfaces[r.index].desc.dtype == DType::kI8 &&
               p.surfaces[r.index].desc.scale == scale;
      };
      // (Not when a step of this operation writes the surface: the others must see it as first read.)
      auto written_here = [&](uint32_t surface) {
        for (const prog::Step& other : op.steps)
          for (const Ref& r : other.outputs)
            if (r.kind == Ref::Kind::kSurface && r.index == surface) return true;
        return false;
      };
      if (s.rules.exact_int8_conv && ps.conv && ps.conv->packed && !s.inputs.empty() &&
          !s.rules.inputs.empty() && int8_surface_at(s.inputs[0], s.rules.inputs[0].quantize_scale) &&
          quant::levels_round_trip(s.rules.inputs[0].quantize_scale) && !loaded.count(s.inputs[0].index) &&
          !written_here(s.inputs[0].index)) {
        const TensorDesc& d = p.surfaces[s.inputs[0].index].desc;
        if (d.format == IoFormat::kChw32 && d.network_shape.size() == 4)
          levels = {Int8Input::atoms(reinterpret_cast<const int8_t*>(base(p.surfaces[s.inputs[0].index])), 32,
                                     d.stride[3], d.stride[2], d.stride[1]),
                    d.network_shape};
      }
      shortcuts.levels = levels.levels.data ? &levels : nullptr;
      for (size_t i = 0; i < s.inputs.size() && i < s.rules.inputs.size(); ++i)
        shortcuts.input_on_grid.push_back(s.rules.inputs[i].quantize_scale > 0 &&
                                          int8_surface_at(s.inputs[i], s.rules.inputs[i].quantize_scale));
      for (size_t o = 0; o < s.outputs.size() && o < s.rules.outputs.size(); ++o)
        shortcuts.output_quantized_by_caller.push_back(
            int8_surface_at(s.outputs[o], s.rules.outputs[o].scale));
      // ... and an exact INT8 convolution writes such a chw32 surface itself.
      Int8Output direct;
      if (s.rules.exact_int8_conv && ps.conv && ps.conv->packed &&
          !shortcuts.output_quantized_by_caller.empty() && shortcuts.output_quantized_by_caller[0] &&
          s.rules.outputs[0].store == numerics::Store::kInt8 &&
          quant::levels_round_trip(s.rules.outputs[0].scale) &&
          s.rules.rounding == quant::Rounding::kHalfAwayFromZero) {
        const prog::Surface& sf = p.surfaces[s.outputs[0].index];
        // Written while its input is read in place: only if they share no bytes.
        const bool clash = levels.levels.data && overlap(sf, p.surfaces[s.inputs[0].index]);
        if (sf.desc.format == IoFormat::kChw32 && sf.desc.network_shape.size() == 4 && !clash) {
          direct.atoms = reinterpret_cast<int8_t*>(base(sf));
          direct.batch = sf.desc.stride[3], direct.group = sf.desc.stride[2], direct.line = sf.desc.stride[1];
          direct.scale = sf.desc.scale;
          shortcuts.int8_output = &direct;
        }
      }
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        const Ref& r = s.inputs[i];
        if (i == 0 && levels.levels.data) continue;
        if (r.kind == Ref::Kind::kConstant) {
          ins[i] = ps.constants[i];
        } else if (r.kind == Ref::Kind::kTemp) {
          ins[i] = &temps.at(r.index);
        } else if (r.kind == Ref::Kind::kSurface) {
          auto it = loaded.find(r.index);
          if (it == loaded.end()) {
            const prog::Surface& sf = p.surfaces[r.index];
            it = loaded.emplace(r.index, read_surface(sf.desc, base(sf))).first;
          }
          ins[i] = &it->second;
        }
      }
      std::vector<Tensor> res =
          numerics::run_step(ps.node, s.rules, ins, ps.is_constant, s.out_types, ps.conv.get(), &shortcuts);
      for (size_t o = 0; o < s.outputs.size(); ++o) {
        const Ref& r = s.outputs[o];
        if (r.kind == Ref::Kind::kTemp) {
          temps.push_back(std::move(res[o]));
        } else if (r.kind == Ref::Kind::kSurface && !(o == 0 && shortcuts.int8_output)) {
          const prog::Surface& sf = p.surfaces[r.index];
          write_surface(res[o], sf.desc, base(sf));
        }
      }
    }
    record_time();
  }
  if (staged) {
    control.check("the output copy");
    for (size_t i = 0; i < out.size(); ++i)
      std::memcpy(out[i], out_staging_[i].data(), out_staging_[i].size());
  }
}

}  // namespace dlakit::rt
