// Runs the ONNX backend test cases (Debian's libonnx-testdata) whose ops are all in dlakit's op list on
// the reference engine and writes a Markdown report: pass / fail / skip per case, every skip with its
// reason. Exit status 1 when a case fails or is skipped without being listed in the skip file.
// With --via-cli=DLAKIT, every case that passes is also run as a user would: `dlakit run model.onnx --input
// name=file.npy ...` with every input as a .npy file, the outputs read back from --output-dir.
// Usage: dlakit_conformance DATA_ROOT SKIP_FILE REPORT.md [--via-cli=DLAKIT]
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "io/npy.h"
#include "onnx/importer.h"

namespace fs = std::filesystem;
using namespace dlakit;

namespace {

struct Result {
  std::string suite, name, status, detail;
  std::string cli;  // with --via-cli, for a case that passes: "" (passes through the CLI too) or what failed
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

// Runs `dlakit run` on the case with every input as a .npy file; "" when every output matches.
std::string run_via_cli(const std::string& dlakit, const fs::path& model,
                        const std::vector<std::pair<std::string, Tensor>>& given,
                        const std::vector<std::pair<std::string, Tensor>>& expected, const fs::path& tmp) {
  fs::create_directories(tmp);
  std::string cmd =
      "'" + dlakit + "' run '" + model.string() + "' --json --output-dir '" + (tmp / "out").string() + "'";
  for (size_t k = 0; k < given.size(); ++k) {
    const fs::path f = tmp / cat("input_", k, ".npy");
    write_npy(f.string(), given[k].second);
    cmd += " --input '" + given[k].first + "=" + f.string() + "'";
  }
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return "cannot start " + dlakit;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  if (pclose(pipe) != 0) return "dlakit run failed: " + out.substr(0, 400);
  std::map<std::string, std::string> files;
  try {
    const nlohmann::json j = nlohmann::json::parse(out.substr(out.find('{')));
    for (auto& o : j.at("outputs")) files[o["name"].get<std::string>()] = o["file"].get<std::string>();
  } catch (const std::exception& e) {
    return cat("unreadable --json output (", e.what(), "): ", out.substr(0, 200));
  }
  for (auto& [name, want] : expected) {
    if (!files.count(name)) return "no output " + name;
    const std::string diff = compare(read_npy(files[name]), want, name);
    if (!diff.empty()) return diff;
  }
  return "";
}

Result run_case(const fs::path& dir, const std::string& suite, const std::string& via_cli) {
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
    // Node tests feed shape parameters (Reshape's shape, Resize's scales, axes, pads...) as graph inputs.
    // A DLA build needs them constant: the importer binds the inputs that shape inference needs (the
    // graph is specialized on their values, as `dlakit run` does); data tensors stay runtime inputs.
    ImportOptions opt;
    for (auto& [name, t] : given) opt.runtime_values[name] = t;
    const Graph g = import_onnx_file(model, opt);
    TensorMap inputs;
    for (auto& [name, t] : given)
      if (!g.value(*g.find_value(name)).constant) inputs[name] = t;
    if (inputs.size() < given.size()) r.detail = "parameters bound as constants";
    ReferenceEngine engine(g);
    TensorMap outputs = engine.run(inputs);
    std::vector<std::pair<std::string, Tensor>> expected;
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      fs::path p = data / cat("output_", k, ".pb");
      if (!fs::exists(p)) continue;
      const std::string& name = g.value(g.outputs[k]).name;
      expected.emplace_back(name, load_tensor_pb(p.string()));
      std::string diff = compare(outputs.at(name), expected.back().second, name);
      if (!diff.empty()) {
        r.status = "fail";
        r.detail = diff;
      }
    }
    if (r.status == "pass" && !via_cli.empty()) {
      const fs::path tmp = fs::temp_directory_path() / cat("dlakit_conformance_", getpid()) / suite / r.name;
      r.cli = run_via_cli(via_cli, model, given, expected, tmp);
      fs::remove_all(tmp);
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
  const std::string cli_flag = "--via-cli=";
  if (argc != 4 && !(argc == 5 && std::string(argv[4]).rfind(cli_flag, 0) == 0)) {
    std::cerr << "usage: dlakit_conformance DATA_ROOT SKIP_FILE REPORT.md [--via-cli=DLAKIT]\n";
    return 2;
  }
  const std::string via_cli = argc == 5 ? std::string(argv[4]).substr(cli_flag.size()) : "";
  const fs::path root = argv[1];
  // The skip file: "suite/case | what its error says | reason". A case is skipped as listed only when its
  // Unsupported error says that; another error on a listed case is an unexpected skip.
  struct AllowedSkip {
    std::string says, reason;
  };
  std::map<std::string, AllowedSkip> allowed_skips;  // suite/case -> its entry
  {
    std::ifstream f(argv[2]);
    if (!f) {
      std::cerr << "cannot read skip file " << argv[2] << "\n";
      return 2;
    }
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t a = line.find(" | "), b = a == std::string::npos ? a : line.find(" | ", a + 3);
      if (b == std::string::npos || b == a + 3) {
        std::cerr << argv[2] << ": '" << line << "' is not 'suite/case | what its error says | reason'\n";
        return 2;
      }
      allowed_skips[line.substr(0, a)] = {line.substr(a + 3, b - a - 3), line.substr(b + 3)};
    }
  }
  auto entry_of = [&](const Result& r) -> const AllowedSkip* {
    const auto it = allowed_skips.find(r.suite + "/" + r.name);
    return it == allowed_skips.end() ? nullptr : &it->second;
  };
  // The entry of a skipped case whose error says what its entry expects; null for any other case.
  auto listed_skip = [&](const Result& r) -> const AllowedSkip* {
    const AllowedSkip* entry = r.status == "skip" ? entry_of(r) : nullptr;
    return entry && r.detail.find(entry->says) != std::string::npos ? entry : nullptr;
  };
  std::vector<Result> results;
  std::vector<std::pair<size_t, fs::path>> to_run;  // (slot in results, case directory)
  std::map<std::string, int> out_of_scope;          // op -> cases not run because of it
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
      to_run.emplace_back(results.size(), c);
      results.push_back({suite, c.filename().string(), "", ""});
    }
  }
  // The cases are independent: one per core at a time (under the sanitizers, each `dlakit run` of
  // --via-cli costs a process start that would otherwise leave the other core idle).
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < to_run.size();) {
      Result& slot = results[to_run[i].first];
      try {
        slot = run_case(to_run[i].second, slot.suite, via_cli);
      } catch (...) {  // run_case reports what it knows; anything else still fails the case, not the run
        slot.status = "fail";
        slot.detail = "unknown exception";
      }
    }
  };
  std::vector<std::thread> workers;
  // At most 8: under the sanitizers each case's engine and `dlakit run` child are large.
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  for (unsigned k = 1; k < threads; ++k) workers.emplace_back(worker);
  worker();
  for (std::thread& t : workers) t.join();
  std::error_code ignored;  // a leftover temporary folder is no reason to lose the report
  fs::remove_all(fs::temp_directory_path() / cat("dlakit_conformance_", getpid()), ignored);
  int pass = 0, fail = 0, skip = 0, unexpected = 0, cli_pass = 0;
  std::ostringstream fails, cli_fails;
  for (auto& r : results) {
    if (r.status == "pass") ++pass;
    if (r.status == "pass" && !via_cli.empty()) {
      cli_pass += r.cli.empty();
      if (!r.cli.empty()) {
        fails << "FAIL THROUGH THE CLI " << r.suite << "/" << r.name << ": " << one_line(r.cli) << "\n";
        cli_fails << "| " << r.suite << " | " << r.name << " | " << one_line(r.cli) << " |\n";
      }
    }
    if (r.status == "fail") {
      ++fail;
      fails << "FAIL " << r.suite << "/" << r.name << ": " << one_line(r.detail) << "\n";
    }
    if (r.status == "skip") {
      ++skip;
      if (!listed_skip(r)) {
        ++unexpected;
        const AllowedSkip* entry = entry_of(r);
        fails << (entry ? "SKIP FOR ANOTHER REASON " : "UNLISTED SKIP ") << r.suite << "/" << r.name << ": "
              << one_line(r.detail) << (entry ? " (listed for an error saying '" + entry->says + "')" : "")
              << "\n";
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
      << out_of_scope_cases << " |\n";
  if (!via_cli.empty())
    rep << "| passing cases that also pass through `dlakit run` (every input a .npy file) | " << cli_pass
        << " of " << pass << " |\n";
  rep << "\n";
  if (!cli_fails.str().empty())
    rep << "## Cases that fail through `dlakit run`\n\n| suite | case | what failed |\n|---|---|---|\n"
        << cli_fails.str() << "\n";
  rep << "## Results\n\n| suite | case | result | reason |\n|---|---|---|---|\n";
  for (auto& r : results) {
    const AllowedSkip* listed = listed_skip(r);
    const std::string reason = listed ? listed->reason + " (" + one_line(r.detail) + ")" : one_line(r.detail);
    rep << "| " << r.suite << " | " << r.name << " | " << r.status << " | " << reason << " |\n";
  }
  rep << "\n## Cases not run, by the op outside the list\n\n| op | cases |\n|---|---|\n";
  for (auto& [op, n] : out_of_scope) rep << "| " << op << " | " << n << " |\n";
  std::cout << fails.str();
  std::cout << pass << " passed, " << fail << " failed, " << skip << " skipped";
  if (!via_cli.empty()) std::cout << "; through dlakit run: " << cli_pass << " of " << pass << " pass";
  std::cout << "\n";
  return fail || unexpected || (!via_cli.empty() && cli_pass != pass) ? 1 : 0;
}
