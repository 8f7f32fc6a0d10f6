#include "compiler/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "base/error.h"

namespace dlakit::compiler {
namespace {

constexpr uint64_t kAlign = 32;  // the DLA's memory atom (dla-constraints.md §5.3)

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

uint64_t parse_size(const std::string& pool, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  double scale = double(1 << 20);  // MiB unless suffixed
  if (unit == "B")
    scale = 1;
  else if (unit == "K")
    scale = 1024;
  else if (unit == "G")
    scale = double(1 << 30);
  else if (!unit.empty() && unit != "M")
    used = 0;
  if (used == 0 || !(value >= 0) || value * scale > double(uint64_t(1) << 40))
    fail(Status::kInvalidArgument, "--memPoolSize ", pool, ":", text,
         ": give a size in MiB, or with a suffix B, K, M or G (e.g. dlaSRAM:1 or dlaSRAM:512K)");
  return uint64_t(value * scale);
}

}  // namespace

MemoryBudgets parse_mem_pool_sizes(const std::string& spec, MemoryBudgets b) {
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
      fail(Status::kInvalidArgument, "--memPoolSize entry '", item, "' should be pool:size, e.g. dlaSRAM:1");
    const std::string pool = item.substr(0, colon);
    const uint64_t size = parse_size(pool, item.substr(colon + 1));
    uint64_t* slot = pool == "dlaSRAM"         ? &b.sram
                     : pool == "dlaLocalDRAM"  ? &b.local_dram
                     : pool == "dlaGlobalDRAM" ? &b.global_dram
                                               : nullptr;
    if (!slot) {
      if (pool == "workspace" || pool == "tacticSharedMem") continue;  // GPU pools: nothing on the DLA
      fail(Status::kInvalidArgument, "--memPoolSize pool '", pool,
           "': one of dlaSRAM, dlaLocalDRAM, dlaGlobalDRAM (workspace, tacticSharedMem are GPU pools)");
    }
    uint64_t v = size;
    if (slot == &b.sram) {  // trtexec rounds dlaSRAM down to a power of two and clips it to 1 GiB
      v = std::min<uint64_t>(v, uint64_t(1) << 30);
      while (v && !power_of_two(v)) v &= v - 1;
    }
    if (v < 4096 || !power_of_two(v))
      fail(Status::kInvalidArgument, "--memPoolSize ", pool, ":", item.substr(colon + 1), " is ", v,
           " bytes; DLA pools must be a power of two of at least 4 KiB (dla-constraints.md §1.1)");
    *slot = v;
  }
  return b;
}

void plan_memory(prog::Program& p, const MemoryBudgets& budgets) {
  const size_t ns = p.surfaces.size();
  // Views: their root surface and their offset from it; strides across images are the root's.
  std::vector<int> root(ns, -1);
  std::vector<uint64_t> rel(ns, 0);
  std::function<int(size_t)> resolve = [&](size_t s) -> int {
    if (root[s] >= 0) return root[s];
    const int parent = p.surfaces[s].parent;
    if (parent < 0) return root[s] = int(s);
    if (size_t(parent) >= ns || size_t(parent) == s)
      fail(Status::kInternal, "surface ", s, " is a view of surface ", parent);
    const int r = resolve(size_t(parent));
    rel[s] = rel[size_t(parent)] + p.surfaces[s].offset;
    return root[s] = r;
  };
  for (size_t s = 0; s < ns; ++s) resolve(s);
  // Lifetimes of the roots in operation order: from the first write of any of their views to the last
  // access of any of them.
  std::vector<int> first(ns, int(p.ops.size())), last(ns, -1);
  for (size_t t = 0; t < p.ops.size(); ++t) {
    for (uint32_t s : p.ops[t].writes) {
      first[size_t(root[s])] = std::min(first[size_t(root[s])], int(t));
      last[size_t(root[s])] = std::max(last[size_t(root[s])], int(t));
    }
    for (uint32_t s : p.ops[t].reads) last[size_t(root[s])] = std::max(last[size_t(root[s])], int(t));
  }
  // A convolution whose result the next operation's Add takes runs with it as one pass (NVDLA's SDP takes
  // one operand of an element-wise layer from the convolution pipeline, the other from memory: nvdla.org
  // hw/v1 hwarch, SDP; that Orin's DLA fuses it so is an assumption. dlakit's CUDA executor writes the sum
  // from the convolution's epilogue): the convolution's inputs are still read while the sum is written, so
  // they live until the Add.
  for (size_t t = 0; t + 1 < p.ops.size(); ++t) {
    const prog::Op &conv = p.ops[t], &next = p.ops[t + 1];
    if (conv.engine != prog::Engine::kConv || next.steps.empty() || next.steps[0].op != OpKind::Add) continue;
    const bool takes_result = std::any_of(next.reads.begin(), next.reads.end(), [&](uint32_t r) {
      return std::any_of(conv.writes.begin(), conv.writes.end(),
                         [&](uint32_t w) { return root[r] == root[w]; });
    });
    if (!takes_result) continue;
    for (uint32_t s : conv.reads) last[size_t(root[s])] = std::max(last[size_t(root[s])], int(t + 1));
  }
  std::vector<size_t> order;
  for (size_t s = 0; s < ns; ++s) {
    const prog::Surface& x = p.surfaces[s];
    if (root[s] == int(s) && x.pool != prog::Pool::kInput && x.pool != prog::Pool::kOutput)
      order.push_back(s);
  }
  // Greedy by size (largest first), each at the lowest offset free for its whole lifetime: SRAM while it
  // fits the budget, else local DRAM.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.surfaces[a].bytes > p.surfaces[b].bytes; });
  struct Placed {
    uint64_t begin, end;
    int first, last;
  };
  std::vector<Placed> sram, dram;
  auto lowest_free = [&](const std::vector<Placed>& placed, uint64_t bytes, int f, int l) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Placed& q : placed)
      if (q.first <= l && f <= q.last) busy.push_back({q.begin, q.end});
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [b, e] : busy) {
      if (b >= at + bytes) break;
      at = std::max(at, (e + kAlign - 1) / kAlign * kAlign);
    }
    return at;
  };
  for (size_t s : order) {
    prog::Surface& x = p.surfaces[s];
    const int f = first[s], l = std::max(last[s], first[s]);
    const uint64_t at = lowest_free(sram, x.bytes, f, l);
    if (at + x.bytes <= budgets.sram) {
      x.pool = prog::Pool::kSram;
      x.offset = at;
      sram.push_back({at, at + x.bytes, f, l});
    } else {
      x.pool = prog::Pool::kLocalDram;
      x.offset = lowest_free(dram, x.bytes, f, l);
      dram.push_back({x.offset, x.offset + x.bytes, f, l});
    }
  }
  auto peak = [](const std::vector<Placed>& v) {
    uint64_t m = 0;
    for (const Placed& q : v) m = std::max(m, q.end);
    return m;
  };
  p.sram = {budgets.sram, peak(sram)};
  p.local_dram = {budgets.local_dram, peak(dram)};
  p.global_dram = {budgets.global_dram, uint64_t(p.blob.size())};
  if (p.local_dram.used > p.local_dram.budget)
    fail(Status::kInvalidArgument, "the program needs ", p.local_dram.used,
         " bytes of local DRAM for its intermediate tensors (after ", p.sram.budget,
         " bytes of SRAM), more than the dlaLocalDRAM pool's ", p.local_dram.budget,
         " bytes; raise it with --memPoolSize=dlaLocalDRAM:<MiB> (a power of two)");
  if (p.global_dram.used > p.global_dram.budget)
    fail(Status::kInvalidArgument, "the program's weights and constants need ", p.global_dram.used,
         " bytes, more than the dlaGlobalDRAM pool's ", p.global_dram.budget,
         " bytes; raise it with --memPoolSize=dlaGlobalDRAM:<MiB> (a power of two)");
  // Views take their root's pool and place; across images they step by the root's image stride.
  for (size_t s = 0; s < ns; ++s) {
    if (root[s] == int(s)) continue;
    prog::Surface& v = p.surfaces[s];
    const prog::Surface& r = p.surfaces[size_t(root[s])];
    v.pool = r.pool;
    v.io_index = r.io_index;
    v.offset = r.offset + rel[s];
    v.desc.stride[3] = r.desc.stride[3];
    const uint64_t atom = v.desc.format == rt::IoFormat::kChw16   ? 16
                          : v.desc.format == rt::IoFormat::kChw32 ? 32
                                                                  : 0;
    const uint64_t planes = atom ? (v.desc.c + atom - 1) / atom : v.desc.c;
    v.bytes = (v.desc.n - 1) * v.desc.stride[3] + planes * v.desc.stride[2];
  }
}

}  // namespace dlakit::compiler
