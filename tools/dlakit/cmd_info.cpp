// dlakit info MODEL: what the model is (I/O, opset, ops, parameters, MACs) and anything unsupported.
#include <iostream>
#include <memory>

#include "base/error.h"
#include "base/file.h"
#include "cli.h"
#include "ir/stats.h"
#include "loadable/plan.h"
#include "program/format.h"
#include "program/print.h"

namespace dlakit::cli {
namespace {

struct InfoFlags {
  ModelFlags model;
  bool json = false;
  std::string dump;
};

std::string dims_text(const std::vector<std::string>& d) {
  std::string s;
  for (auto& x : d) s += (s.empty() ? "" : "x") + x;
  return s.empty() ? "scalar" : s;
}

// A loadable (DLAK) or a hybrid plan (DLKP): the compiled program(s) instead of an ONNX model.
bool run_info_compiled(const InfoFlags& f) {
  const std::string bytes = read_file(f.model.model);
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  std::vector<std::pair<std::string, prog::Program>> programs;  // (where, program)
  nlohmann::json plan_json;
  if (bytes.size() >= 8 && bytes.compare(4, 4, "DLAK") == 0) {
    programs.push_back({"", prog::deserialize(data, bytes.size(), f.model.model)});
  } else if (is_plan(data, bytes.size())) {
    for (const PlanSegment& s : read_plan(data, bytes.size(), f.model.model).segments) {
      plan_json["segments"].push_back(
          {{"device", s.dla ? "DLA" : "GPU"}, {"inputs", s.inputs}, {"outputs", s.outputs}});
      if (s.dla)
        programs.push_back({"segment " + std::to_string(plan_json["segments"].size() - 1),
                            prog::deserialize(reinterpret_cast<const uint8_t*>(s.payload.data()),
                                              s.payload.size(), f.model.model + " segment")});
    }
  } else {
    return false;
  }
  if (f.json) {
    nlohmann::json j = plan_json.is_null() ? prog::to_json(programs[0].second) : plan_json;
    if (!plan_json.is_null())
      for (size_t i = 0, k = 0; i < j["segments"].size(); ++i)
        if (j["segments"][i]["device"] == "DLA")
          j["segments"][i]["program"] = prog::to_json(programs[k++].second);
    j["file"] = f.model.model;
    j["file_bytes"] = bytes.size();
    std::cout << j.dump(2) << "\n";
    return true;
  }
  std::cout << f.model.model << ": " << bytes.size() << " bytes, "
            << (plan_json.is_null()
                    ? "a DLA loadable (dlakit program format " + std::to_string(prog::kFormatVersion) + ")"
                    : "a hybrid plan with " + std::to_string(programs.size()) + " DLA program(s)")
            << "\n";
  for (const auto& [where, p] : programs) {
    if (!where.empty()) std::cout << where << ":\n";
    std::cout << (f.dump == "program" ? prog::to_text(p) : prog::summary(p));
  }
  return true;
}

void run_info(const InfoFlags& f) {
  if (run_info_compiled(f)) return;
  if (f.dump == "program")
    fail(Status::kInvalidArgument, "--dump program needs a loadable or a plan (from `dlakit build`)");
  const OnnxSignature sig = read_onnx_signature(f.model.model);
  nlohmann::json j;
  j["model"] = f.model.model;
  j["producer"] = sig.producer;
  j["ir_version"] = sig.ir_version;
  j["opset"] = sig.opset;
  for (auto& io : sig.inputs)
    j["declared_inputs"].push_back({{"name", io.name}, {"dtype", io.dtype}, {"dims", io.dims}});
  for (auto& io : sig.outputs)
    j["declared_outputs"].push_back({{"name", io.name}, {"dtype", io.dtype}, {"dims", io.dims}});
  j["file_nodes"] = sig.node_count;
  j["file_op_histogram"] = sig.op_histogram;
  std::unique_ptr<Graph> g;
  std::string problem;
  Status problem_status = Status::kInternal;
  try {
    g = std::make_unique<Graph>(import_onnx_file(f.model.model, f.model.import_options()));
  } catch (const Error& e) {
    problem = e.what();
    problem_status = e.status();
  }
  if (g) {
    for (int id : g->inputs)
      j["inputs"].push_back({{"name", g->value(id).name}, {"type", type_str(g->value(id).type)}});
    for (int id : g->outputs)
      j["outputs"].push_back({{"name", g->value(id).name}, {"type", type_str(g->value(id).type)}});
    j["nodes"] = g->nodes.size();
    j["op_histogram"] = op_histogram(*g);
    j["parameters"] = g->parameter_count();
    j["macs"] = graph_macs(*g);
    j["unsupported"] = nlohmann::json::array();
  } else {
    j["import_error"] = {{"status", status_name(problem_status)}, {"message", problem}};
  }
  if (f.dump == "ir" && g) {
    std::cout << g->to_text();
    return;
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "model:    " << f.model.model << "\n"
              << "producer: " << sig.producer << " (ir " << sig.ir_version << ", opset " << sig.opset
              << ")\n";
    std::cout << "declared inputs:\n";
    for (auto& io : sig.inputs)
      std::cout << "  " << io.name << "  " << io.dtype << "[" << dims_text(io.dims) << "]\n";
    if (g) {
      std::cout << "inputs (as imported):\n";
      for (int id : g->inputs)
        std::cout << "  " << g->value(id).name << "  " << type_str(g->value(id).type) << "\n";
      std::cout << "outputs:\n";
      for (int id : g->outputs)
        std::cout << "  " << g->value(id).name << "  " << type_str(g->value(id).type) << "\n";
      std::cout << "nodes:    " << sig.node_count << " in the file, " << g->nodes.size()
                << " after constant folding\nops:\n";
      for (auto& [op, n] : op_histogram(*g)) std::cout << "  " << op << " " << n << "\n";
      std::cout << "parameters: " << human(double(g->parameter_count()))
                << "\nMACs:       " << human(double(graph_macs(*g))) << "\nunsupported: none\n";
    } else {
      std::cout << "import failed (" << status_name(problem_status) << "):\n  " << problem << "\n";
    }
  }
  if (!g) throw Error(problem_status, "the model cannot be imported (details above)");
}

}  // namespace

void register_info(CLI::App& app) {
  auto f = std::make_shared<InfoFlags>();
  CLI::App* sub = app.add_subcommand(
      "info",
      "Show an ONNX model's inputs, outputs, opset, ops, parameters, MACs and anything unsupported; or a "
      "loadable's (.dla) or plan's compiled program: operations per engine, memory pools, I/O descriptors");
  f->model.add(*sub);
  sub->add_flag("--json", f->json, "Print JSON instead of text");
  sub->add_option(
         "--dump", f->dump,
         "Print an internal form instead: ir (an ONNX model's imported graph), program (a loadable's "
         "or plan's compiled DLA program: operations, surfaces, pools, constants)")
      ->check(CLI::IsMember({"ir", "program"}));
  sub->callback([f] { run_info(*f); });
}

}  // namespace dlakit::cli
