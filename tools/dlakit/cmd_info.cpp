// dlakit info MODEL: what the model is (I/O, opset, ops, parameters, MACs) and anything unsupported.
#include <iostream>
#include <memory>

#include "base/error.h"
#include "cli.h"
#include "ir/stats.h"

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

void run_info(const InfoFlags& f) {
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
      "info", "Show a model's inputs, outputs, opset, ops, parameters, MACs and anything unsupported");
  f->model.add(*sub);
  sub->add_flag("--json", f->json, "Print JSON instead of text");
  sub->add_option("--dump", f->dump, "Print an internal form instead: ir (the imported graph)")
      ->check(CLI::IsMember({"ir"}));
  sub->callback([f] { run_info(*f); });
}

}  // namespace dlakit::cli
