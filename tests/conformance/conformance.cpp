// Runs the ONNX backend test cases (Debian's libonnx-testdata) whose ops are all in dlakit's op list on
// the reference engine and writes a Markdown report: pass / fail / skip per case, every skip with its
// reason. Exit status 1 when a case fails or is skipped without being listed in the skip file.
// Usage: dlakit_conformance DATA_ROOT SKIP_FILE REPORT.md
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "engine/engine.h"
#include "onnx/importer.h"

namespace fs = std::filesystem;
using namespace dlakit;

namespace {

struct Result {
  std::string suite, name, status, detail;
};

// ONNX backend-test tolerance: |a - b| <= atol + rtol * |b|.
std::string compare(const Tensor& got, const Tensor& want, const std::string& name) {
  if (got.dtype() != want.dtype())
    return cat(name, ": dtype ", dtype_name(got.dtype()), " != expected ", dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return cat(name, ": shape ", shape_str(got.shape()), " != expected ", shape_str(want.shape()));
  const double rtol = 1e-3, atol = 1e-7;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.at_f64(i), b = want.at_f64(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(a) && a == b) continue;
    const double err = std::fabs(a - b);
    if (!(err <= atol + rtol * std::fabs(b))) {
      if (first < 0) first = i;
      ++bad;
      worst = std::max(worst, err);
    }
  }
  if (!bad) return "";
  return cat(name, ": ", bad, "/", got.numel(), " elements differ (first at ", first, ": ", got.at_f64(first),
             " vs ", want.at_f64(first), ", max abs err ", worst, ")");
}

// Node tests feed shape parameters (Reshape's shape, Resize's scales, axes, pads...) as graph inputs. A DLA
// build needs them constant, so when import asks for that they are bound: integer and bool inputs, and
// float inputs of at most 16 elements. Data tensors stay runtime inputs.
bool is_parameter(const Tensor& t) { return !is_float(t.dtype()) || t.numel() <= 16; }

Result run_case(const fs::path& dir, const std::string& suite) {
  Result r{suite, dir.filename().string(), "pass", ""};
  try {
    const fs::path data = dir / "test_data_set_0";
    const std::string model = (dir / "model.onnx").string();
    std::vector<std::pair<std::string, Tensor>> given;  // graph input order
    {
      OnnxSignature sig = read_onnx_signature(model);
      for (auto& io : sig.inputs)
        if (io.dtype == "?")
          fail(Status::kUnsupported, "input '", io.name,
               "' is not a tensor (sequence/optional types are out of scope)");
      for (size_t k = 0; k < sig.inputs.size(); ++k)
        given.emplace_back(sig.inputs[k].name, load_tensor_pb((data / cat("input_", k, ".pb")).string()));
    }
    ImportOptions opt;
    Graph g;
    try {
      g = import_onnx_file(model, opt);
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (msg.find("computed at run time") == std::string::npos &&
          msg.find("must be a constant") == std::string::npos)
        throw;
      for (auto& [name, t] : given)
        if (is_parameter(t)) opt.constant_inputs[name] = t;
      g = import_onnx_file(model, opt);
      r.detail = "parameters bound as constants";
    }
    TensorMap inputs;
    for (auto& [name, t] : given)
      if (!opt.constant_inputs.count(name)) inputs[name] = t;
    ReferenceEngine engine(g);
    TensorMap outputs = engine.run(inputs);
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      fs::path p = data / cat("output_", k, ".pb");
      if (!fs::exists(p)) continue;
      const std::string& name = g.value(g.outputs[k]).name;
      std::string diff = compare(outputs.at(name), load_tensor_pb(p.string()), name);
      if (!diff.empty()) {
        r.status = "fail";
        r.detail = diff;
      }
    }
  } catch (const Error& e) {
    r.status = e.status() == Status::kUnsupported ? "skip" : "fail";
    r.detail = cat(status_name(e.status()), ": ", e.what());
  } catch (const std::exception& e) {
    r.status = "fail";
    r.detail = cat("exception: ", e.what());
  }
  return r;
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '|', '/');
  const std::string root = "/usr/share/libonnx-testdata/data/";
  for (size_t p; (p = s.find(root)) != std::string::npos;) s.erase(p, root.size());
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: dlakit_conformance DATA_ROOT SKIP_FILE REPORT.md\n";
    return 2;
  }
  const fs::path root = argv[1];
  std::map<std::string, std::string> allowed_skips;  // case -> reason (from the skip file)
  {
    std::ifstream f(argv[2]);
    if (!f) {
      std::cerr << "cannot read skip file " << argv[2] << "\n";
      return 2;
    }
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto sp = line.find(' ');
      allowed_skips[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
    }
  }
  std::vector<Result> results;
  std::map<std::string, int> out_of_scope;  // op -> cases not run because of it
  int out_of_scope_cases = 0;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    if (!fs::exists(root / suite)) {
      std::cerr << "missing " << (root / suite) << " (apt-get install libonnx-testdata)\n";
      return 2;
    }
    std::vector<fs::path> cases;
    for (auto& e : fs::directory_iterator(root / suite))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (auto& c : cases) {
      OnnxSignature sig;
      try {
        sig = read_onnx_signature((c / "model.onnx").string());
      } catch (const Error& e) {
        results.push_back({suite, c.filename().string(), "fail", e.what()});
        continue;
      }
      std::vector<std::string> missing;
      for (auto& [op, n] : sig.op_histogram)
        if (!op_from_name(op)) missing.push_back(op);
      if (!missing.empty()) {
        ++out_of_scope_cases;
        for (auto& m : missing) ++out_of_scope[m];
        continue;
      }
      results.push_back(run_case(c, suite));
    }
  }
  int pass = 0, fail = 0, skip = 0, unexpected = 0;
  std::ostringstream fails;
  for (auto& r : results) {
    if (r.status == "pass") ++pass;
    if (r.status == "fail") {
      ++fail;
      fails << "FAIL " << r.suite << "/" << r.name << ": " << one_line(r.detail) << "\n";
    }
    if (r.status == "skip") {
      ++skip;
      if (!allowed_skips.count(r.name)) {
        ++unexpected;
        fails << "UNLISTED SKIP " << r.suite << "/" << r.name << ": " << one_line(r.detail) << "\n";
      }
    }
  }
  std::ofstream rep(argv[3]);
  rep << "# ONNX backend conformance of the reference engine\n\n"
      << "Generated by `dlakit_conformance` (tests/conformance) over Debian's libonnx-testdata 1.12: every "
         "case in\n"
      << "`node/`, `pytorch-converted/`, `pytorch-operator/` and `simple/` whose ops are all in dlakit's op "
         "list\n"
      << "(src/ir/ops.def). Tolerance as ONNX's backend tests: |got - expected| <= 1e-7 + 1e-3 * "
         "|expected|.\n\n"
      << "| | cases |\n|---|---|\n| pass | " << pass << " |\n| fail | " << fail
      << " |\n| skip (deliberate, reason below) | " << skip << " |\n| not run: an op outside the op list | "
      << out_of_scope_cases << " |\n\n"
      << "## Results\n\n| suite | case | result | reason |\n|---|---|---|---|\n";
  for (auto& r : results) {
    std::string reason = r.status == "skip" && allowed_skips.count(r.name) && !allowed_skips[r.name].empty()
                             ? allowed_skips[r.name] + " (" + one_line(r.detail) + ")"
                             : one_line(r.detail);
    rep << "| " << r.suite << " | " << r.name << " | " << r.status << " | " << reason << " |\n";
  }
  rep << "\n## Cases not run, by the op outside the list\n\n| op | cases |\n|---|---|\n";
  for (auto& [op, n] : out_of_scope) rep << "| " << op << " | " << n << " |\n";
  std::cout << fails.str();
  std::cout << pass << " passed, " << fail << " failed, " << skip << " skipped\n";
  return fail || unexpected ? 1 : 0;
}
