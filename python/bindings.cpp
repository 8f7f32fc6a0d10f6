// dlakit._core: the C++ side of `import dlakit` (pybind11). Thin: every call goes to the same library
// functions the CLI calls (src/workflow, rt::EngineRunner, the reports), with numpy arrays converted at the
// edge and the GIL released while dlakit works. python/dlakit/__init__.py is the documented API on top.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>

#include "base/error.h"
#include "engine/engine.h"
#include "ir/stats.h"
#include "loadable/plan.h"
#include "onnx/importer.h"
#include "placement/placement.h"
#include "quant/calib_cache.h"
#include "report/compare_html.h"
#include "report/inspect_html.h"
#include "runtime/runtime.h"
#include "workflow/build.h"
#include "workflow/calibrate.h"
#include "workflow/compare.h"
#include "workflow/engine_runner.h"
#include "workflow/inspect.h"
#include "workflow/placed_model.h"

namespace py = pybind11;
using namespace dlakit;

namespace {

// --- numpy <-> Tensor

DType dtype_of(const py::array& a, const std::string& what) {
  const char kind = a.dtype().kind();
  const auto size = a.itemsize();
  if (kind == 'f' && size == 4) return DType::kF32;
  if (kind == 'f' && size == 2) return DType::kF16;
  if (kind == 'i' && size == 1) return DType::kI8;
  if (kind == 'u' && size == 1) return DType::kU8;
  if (kind == 'i' && size == 4) return DType::kI32;
  if (kind == 'i' && size == 8) return DType::kI64;
  if (kind == 'b') return DType::kBool;
  fail(Status::kInvalidArgument, what, " has numpy dtype ", std::string(py::str(a.dtype())),
       "; dlakit takes float32, float16, int8, uint8, int32, int64 or bool (e.g. x.astype(np.float32))");
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kF32:
      return py::dtype::of<float>();
    case DType::kF16:
      return py::dtype("float16");
    case DType::kI8:
      return py::dtype::of<int8_t>();
    case DType::kU8:
      return py::dtype::of<uint8_t>();
    case DType::kI32:
      return py::dtype::of<int32_t>();
    case DType::kI64:
      return py::dtype::of<int64_t>();
    case DType::kBool:
      return py::dtype::of<bool>();
  }
  fail(Status::kInternal, "dtype without a numpy equivalent");
}

// One copy into dlakit's 64-byte aligned storage: the engines may write into tensors they share (an output
// that is a reshaped input is rounded in place), so a caller's array is never handed to them.
Tensor to_tensor(const py::handle& obj, const std::string& what) {
  const py::array any = py::array::ensure(obj);
  if (!any)
    fail(Status::kInvalidArgument, what, " is not an array (", std::string(py::str(py::type::of(obj))), ")");
  const DType dt = dtype_of(any, what);
  const py::array a = py::array::ensure(any, py::array::c_style);
  Shape shape(a.shape(), a.shape() + a.ndim());
  Tensor t = Tensor::uninitialized(dt, shape);
  if (t.nbytes()) std::memcpy(t.raw(), a.data(), t.nbytes());
  return t;
}

// No copy when dlakit holds the only reference to the storage: the array keeps the Tensor alive.
py::array to_numpy(Tensor t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  const py::dtype dt = numpy_dtype(t.dtype());
  if (!t.sole_owner() || t.empty()) return py::array(dt, shape, t.raw());  // shared: a copy
  auto* owner = new Tensor(std::move(t));
  py::capsule free(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, shape, owner->raw(), free);
}

TensorMap to_tensor_map(const py::dict& d) {
  TensorMap m;
  for (auto [k, v] : d) {
    const std::string name = py::str(k);
    m[name] = to_tensor(v, "input '" + name + "'");
  }
  return m;
}

py::dict to_dict(TensorMap m, const std::vector<std::string>& order) {
  py::dict d;
  for (const auto& name : order) d[py::str(name)] = to_numpy(std::move(m.at(name)));
  return d;
}

// --- the objects

struct Model {
  std::string path;
  std::shared_ptr<const Graph> graph;
};

struct Placed {
  std::shared_ptr<const workflow::PlacedModel> pm;
};

py::list io_list(const Graph& g, const std::vector<int>& ids) {
  py::list l;
  for (int id : ids) {
    const Value& v = g.value(id);
    l.append(py::make_tuple(v.name, dtype_name(v.type.dtype), py::tuple(py::cast(v.type.shape))));
  }
  return l;
}

Placed place_for(const Model& m, const workflow::PlacementRequest& r, bool run_passes,
                 const std::vector<std::string>& disabled) {
  py::gil_scoped_release nogil;
  const PlacementOptions o = workflow::placement_options(r);
  return {std::make_shared<const workflow::PlacedModel>(
      workflow::place_model(*m.graph, m.path, o, {run_passes, disabled}))};
}

// Progress callbacks from dlakit's threads into Python.
std::function<void(int, int)> progress_of(const py::object& cb) {
  if (cb.is_none()) return {};
  return [cb](int done, int total) {
    py::gil_scoped_acquire gil;
    cb(done, total);
  };
}

py::tuple calibrate_for(const Placed& p, py::iterator samples, const std::string& algo, double percentile,
                        int trt_version, const py::object& on_sample) {
  workflow::CalibrateOptions o;
  o.algos = workflow::parse_calib_algos(algo);
  o.percentile = percentile;
  o.trt_version = trt_version;
  workflow::require_calibratable(*p.pm);
  workflow::Calibration c;
  {
    py::gil_scoped_release nogil;
    c = workflow::calibrate(
        *p.pm,
        [&](TensorMap& sample) {
          py::gil_scoped_acquire gil;
          if (samples == py::iterator::sentinel()) return false;
          const py::handle item = *samples;
          if (!py::isinstance<py::dict>(item))
            fail(Status::kInvalidArgument, "a calibration sample must be a dict {input_name: array}, got ",
                 std::string(py::str(py::type::of(item))));
          sample = to_tensor_map(py::reinterpret_borrow<py::dict>(item));
          ++samples;
          return true;
        },
        o,
        [&](int seen) {
          if (on_sample.is_none()) return;
          py::gil_scoped_acquire gil;
          on_sample(seen);
        });
  }
  return py::make_tuple(c.tables, c.maxes, c.samples);
}

py::tuple build_for(const Placed& p, bool int8, const quant::ScaleTable* calib,
                    const std::string& input_formats, const std::string& output_formats) {
  workflow::BuildOptions o;
  o.int8 = int8;
  o.calib = calib;
  o.input_formats = input_formats;
  o.output_formats = output_formats;
  workflow::BuiltEngine e;
  {
    py::gil_scoped_release nogil;
    e = workflow::build_engine(*p.pm, o);
  }
  return py::make_tuple(py::bytes(e.bytes), e.is_plan, e.int8_layers);
}

py::tuple compare_for(const Placed& p, const py::list& samples, bool int8, const quant::ScaleTable* calib,
                      bool gpu_int8, bool fix, int fix_rounds, double fix_target,
                      const py::object& progress) {
  workflow::CompareOptions o;
  o.int8 = int8;
  o.calib = calib;
  o.gpu_int8 = gpu_int8;
  o.fix = fix;
  o.fix_rounds = fix_rounds;
  o.fix_target = fix_target;
  workflow::compare_scales(*p.pm, o);  // before converting the samples
  std::vector<TensorMap> data;
  for (const py::handle& s : samples) {
    if (!py::isinstance<py::dict>(s))
      fail(Status::kInvalidArgument, "a sample must be a dict {input_name: array}, got ",
           std::string(py::str(py::type::of(s))));
    data.push_back(to_tensor_map(py::reinterpret_borrow<py::dict>(s)));
  }
  std::string json, html;
  {
    py::gil_scoped_release nogil;
    const quant::AutoFix a = workflow::compare(*p.pm, data, o, progress_of(progress));
    json = workflow::compare_json(p.pm->placement.model, o, a).dump(2);
    const bool kept = !a.applied.empty();
    html = report::compare_html(
        "dlakit compare: " + p.pm->placement.model + " (" + (int8 ? "INT8" : "FP16") + " vs FP32)", a.before,
        kept ? &a.after : nullptr, fix ? &a.applied : nullptr);
  }
  return py::make_tuple(json, html);
}

void translate(const std::exception_ptr& e, const py::object& error_class) {
  auto raise = [&](const std::string& status, const std::string& message) {
    py::object err = error_class(message);
    err.attr("status") = status;
    PyErr_SetObject(error_class.ptr(), err.ptr());
  };
  try {
    std::rethrow_exception(e);
  } catch (const Error& x) {
    raise(status_name(x.status()), x.what());
  } catch (const rt::RuntimeError& x) {
    raise(rt::status_name(x.status()), x.what());
  }
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "dlakit's C++ core; use the `dlakit` package";
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    if (p) translate(p, error);
  });

  py::class_<Model>(m, "Model")
      .def_readonly("path", &Model::path)
      .def_property_readonly("inputs", [](const Model& x) { return io_list(*x.graph, x.graph->inputs); })
      .def_property_readonly("outputs", [](const Model& x) { return io_list(*x.graph, x.graph->outputs); })
      .def_property_readonly("op_histogram", [](const Model& x) { return op_histogram(*x.graph); })
      .def_property_readonly("macs", [](const Model& x) { return graph_macs(*x.graph); })
      .def_property_readonly("parameters", [](const Model& x) { return x.graph->parameter_count(); })
      .def_property_readonly("layers", [](const Model& x) { return x.graph->nodes.size(); });

  m.def(
      "load",
      [](const std::string& path, const std::map<std::string, std::vector<int64_t>>& shapes) {
        ImportOptions o;
        for (const auto& [name, s] : shapes) o.input_shapes[name] = s;
        py::gil_scoped_release nogil;
        return Model{path, std::make_shared<const Graph>(import_onnx_file(path, o))};
      },
      py::arg("path"), py::arg("shapes"));

  m.def(
      "run_model",
      [](const Model& model, const py::dict& feeds) {
        TensorMap in = to_tensor_map(feeds);
        TensorMap out;
        {
          py::gil_scoped_release nogil;
          ReferenceEngine engine(*model.graph);
          out = engine.run(in);
        }
        std::vector<std::string> order;
        for (int id : model.graph->outputs) order.push_back(model.graph->value(id).name);
        return to_dict(std::move(out), order);
      },
      py::arg("model"), py::arg("feeds"));

  py::class_<workflow::PlacementRequest>(m, "PlacementRequest")
      .def(py::init<>())
      .def_readwrite("target", &workflow::PlacementRequest::target)
      .def_readwrite("standalone", &workflow::PlacementRequest::standalone)
      .def_readwrite("int8", &workflow::PlacementRequest::int8)
      .def_readwrite("dla_core", &workflow::PlacementRequest::dla_core)
      .def_readwrite("layer_devices", &workflow::PlacementRequest::layer_devices)
      .def_readwrite("layer_precisions", &workflow::PlacementRequest::layer_precisions)
      .def_readwrite("op_devices", &workflow::PlacementRequest::op_devices)
      .def_readwrite("op_precisions", &workflow::PlacementRequest::op_precisions)
      .def_readwrite("overrides_file", &workflow::PlacementRequest::overrides_file);

  py::class_<Placed>(m, "Placed")
      .def("json",
           [](const Placed& p) { return workflow::inspect_json(p.pm->graph, p.pm->placement).dump(2); })
      .def("text", [](const Placed& p) { return workflow::inspect_text(p.pm->graph, p.pm->placement); })
      .def("html", [](const Placed& p) { return report::inspect_html(p.pm->graph, p.pm->placement); })
      .def("explain", [](const Placed& p, const std::string& layer) {
        return explain_node(p.pm->graph, p.pm->placement, layer);
      });
  m.def("place", &place_for, py::arg("model"), py::arg("request"), py::arg("run_passes"),
        py::arg("disabled_passes"));

  py::class_<quant::ScaleTable>(m, "ScaleTable")
      .def_readonly("algorithm", &quant::ScaleTable::algorithm)
      .def_readonly("trt_version", &quant::ScaleTable::trt_version)
      .def_property_readonly("scales",
                             [](const quant::ScaleTable& t) {
                               py::dict d;
                               for (const auto& [name, s] : t.scales) d[py::str(name)] = s;
                               return d;
                             })
      .def("cache_text", &quant::format_calib_cache)
      .def("save",
           [](const quant::ScaleTable& t, const std::string& path) { quant::write_calib_cache(path, t); });
  m.def("read_calib_cache", &quant::read_calib_cache, py::arg("path"));
  m.def("calibrate", &calibrate_for, py::arg("placed"), py::arg("samples"), py::arg("algo"),
        py::arg("percentile"), py::arg("trt_version"), py::arg("on_sample"));
  m.def("build", &build_for, py::arg("placed"), py::arg("int8"), py::arg("calib"), py::arg("input_formats"),
        py::arg("output_formats"));
  m.def("compare", &compare_for, py::arg("placed"), py::arg("samples"), py::arg("int8"), py::arg("calib"),
        py::arg("gpu_int8"), py::arg("fix"), py::arg("fix_rounds"), py::arg("fix_target"),
        py::arg("progress"));

  py::class_<rt::EngineRunner>(m, "Engine")
      .def(py::init([](const py::bytes& engine, const std::string& backend, int core,
                       const quant::ScaleTable* io_scales) {
             rt::RunnerOptions o;
             o.backend = backend;
             o.dla_core = core;
             o.io_scales = io_scales;
             std::string blob = engine;
             py::gil_scoped_release nogil;
             return rt::EngineRunner::open(blob, o);
           }),
           py::arg("engine"), py::arg("backend"), py::arg("core"), py::arg("io_scales"))
      .def_property_readonly(
          "inputs",
          [](const rt::EngineRunner& e) {
            py::list l;
            for (const auto& in : e.inputs())
              l.append(py::make_tuple(in.name, "f32", py::tuple(py::cast(in.shape)), in.layout));
            return l;
          })
      .def_property_readonly("outputs", &rt::EngineRunner::output_names)
      .def_property_readonly("where", &rt::EngineRunner::where)
      .def("run", [](rt::EngineRunner& e, const py::dict& feeds) {
        TensorMap in = to_tensor_map(feeds);
        TensorMap out;
        {
          py::gil_scoped_release nogil;
          out = e.run(in);
        }
        return to_dict(std::move(out), e.output_names());
      });

  m.def(
      "is_plan",
      [](const py::bytes& engine) {
        const std::string b = engine;
        return is_plan(reinterpret_cast<const uint8_t*>(b.data()), b.size());
      },
      py::arg("engine"));

  // For the tests: an array through the conversions both ways (one copy in, none out).
  m.def("_roundtrip", [](const py::handle& a) { return to_numpy(to_tensor(a, "array")); });
}
