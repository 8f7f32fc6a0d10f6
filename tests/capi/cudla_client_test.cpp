// dlakit's cuDLA client (dlopen, the 16 public functions only) against dlakit's own libcudla.so.1: the
// same outputs as the built-in runtime, bit for bit, on a real model's FP16 and INT8 loadables and both
// cores; and clear errors for a missing library, a foreign one, a partial one, a plan, a bad loadable
// and descriptors whose layout does not fit their buffer.
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/error.h"
#include "common/test_data.h"
#include "common/test_paths.h"
#include "cudla_client/library.h"
#include "onnx/importer.h"
#include "runtime/io_format.h"
#include "runtime/runtime.h"
#include "workflow/build.h"
#include "workflow/engine_runner.h"

using namespace dlakit;

namespace {

// The build's paths, or the environment's (the GPU machine runs a copy:
// tests/device/prepare_cudla_client_run.sh).
const std::string kModel = std::string(test_paths::source_dir()) + "/.cache/models/blazeface_128.onnx";
const std::string kLibrary = test_paths::cudla_library();
const std::string kPartial = test_paths::partial_library();

workflow::PlacedModel placed_blazeface(dla::Precision precision = dla::Precision::kFP16) {
  PlacementOptions o;
  o.standalone = true;
  o.precision = precision;
  return workflow::place_model(import_onnx_file(kModel), kModel, o, {});
}

// Built-in runtime vs the cuDLA client on the same inputs: every output equal bit for bit.
void expect_same_outputs(const std::string& engine, int core) {
  rt::RunnerOptions builtin, client;
  builtin.dla_core = client.dla_core = core;
  client.backend = "cudla:" + kLibrary;
  auto a = rt::EngineRunner::open(engine, builtin);
  auto b = rt::EngineRunner::open(engine, client);
  ASSERT_EQ(a->inputs().size(), b->inputs().size());
  TensorMap feeds;
  uint32_t seed = 5;
  for (size_t i = 0; i < a->inputs().size(); ++i) {
    EXPECT_EQ(a->inputs()[i].shape, b->inputs()[i].shape);
    EXPECT_EQ(a->inputs()[i].layout, b->inputs()[i].layout);
    Graph g;  // random_inputs wants a graph; one input of this shape
    const int v = g.add_value(a->inputs()[i].name, {DType::kF32, a->inputs()[i].shape});
    g.inputs.push_back(v);
    feeds.merge(test_data::random_inputs(g, seed++));
  }
  const TensorMap x = a->run(feeds), y = b->run(feeds);
  ASSERT_EQ(x.size(), b->output_names().size());
  for (const auto& [name, t] : x) {
    ASSERT_TRUE(y.count(name)) << name;
    ASSERT_EQ(t.shape(), y.at(name).shape()) << name;
    EXPECT_EQ(0, std::memcmp(t.raw(), y.at(name).raw(), t.nbytes())) << name;
    double energy = 0;
    for (int64_t i = 0; i < t.numel(); ++i) energy += std::abs(t.at_f64(i));
    EXPECT_GT(energy, 0) << name << " is all zeros: the comparison would prove nothing";
  }
  EXPECT_NE(b->where().find("cuDLA 1.5.0"), std::string::npos) << b->where();
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(CudlaClient, OpensDlakitsLibrary) {
  auto lib = cudla_client::Library::open(kLibrary);
  EXPECT_EQ(lib->version(), 1005000u);
  EXPECT_EQ(lib->device_count(), 2u);
}

TEST(CudlaClient, Fp16LoadableMatchesBuiltinOnBothCores) {
  const std::string engine = workflow::build_engine(placed_blazeface(), {}).bytes;
  expect_same_outputs(engine, 0);
  expect_same_outputs(engine, 1);
}

TEST(CudlaClient, Int8LoadableWithInt8IoMatchesBuiltin) {
  // Placed for INT8 (as build --int8 does): a program stores int8 outputs only from INT8 layers.
  const workflow::PlacedModel pm = placed_blazeface(dla::Precision::kINT8);
  const quant::ScaleTable scales = test_data::random_calibration(pm.graph, 2);
  workflow::BuildOptions o;
  o.int8 = true;
  o.calib = &scales;
  o.input_formats = "int8:chw32";
  o.output_formats = "int8:dla_linear,fp16:chw16,int8:chw32,fp16:dla_linear";  // blazeface has 4 outputs
  expect_same_outputs(workflow::build_engine(pm, o).bytes, 0);
}

TEST(CudlaClient, MissingLibraryIsAnIoError) {
  try {
    cudla_client::Library::open("/nonexistent/libcudla.so.1");
    FAIL() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kIoError);
    EXPECT_NE(std::string(e.what()).find("cannot load the cuDLA library '/nonexistent/libcudla.so.1'"),
              std::string::npos)
        << e.what();
  }
}

TEST(CudlaClient, ForeignAndPartialLibrariesNameWhatTheyLack) {
  const std::string foreign = error_of([] { cudla_client::Library::open("libm.so.6"); });
  EXPECT_NE(foreign.find("is not a cuDLA library: it lacks 16 of the 16 cuDLA functions"), std::string::npos)
      << foreign;
  const std::string partial = error_of([] { cudla_client::Library::open(kPartial); });
  EXPECT_NE(partial.find("it lacks 13 of the 16 cuDLA functions (cudlaMemRegister,"), std::string::npos)
      << partial;
  EXPECT_EQ(partial.find("cudlaGetVersion"), std::string::npos) << partial;
}

TEST(CudlaClient, RejectsPlansAndBadLoadables) {
  PlacementOptions fallback;
  Graph g = import_onnx_file(kModel);
  workflow::PlacedModel pm = workflow::place_model(std::move(g), kModel, fallback, {});
  const std::string plan = workflow::build_engine(pm, {}).bytes;
  rt::RunnerOptions o;
  o.backend = "cudla:" + kLibrary;
  EXPECT_NE(error_of([&] { rt::EngineRunner::open(plan, o); }).find("a hybrid plan"), std::string::npos);
  const std::string garbage(4096, '\x5a');
  const std::string bad = error_of([&] { rt::EngineRunner::open(garbage, o); });
  EXPECT_EQ(bad.rfind("cudlaErrorUmd: cudlaModuleLoadFromMemory", 0), 0u) << bad;
  o.backend = "cudla:";
  EXPECT_NE(error_of([&] { rt::EngineRunner::open(plan, o); }).find("needs a library path"),
            std::string::npos);
}

TEST(CudlaClient, DescriptorsMustFitTheirBuffer) {
  const rt::TensorDesc good = rt::make_desc("x", {1, 3, 20, 20}, {DType::kF16, rt::IoFormat::kChw16}, 64);
  const rt::TensorDesc adopted = rt::adopt_cudla_desc(good);
  EXPECT_EQ(adopted.format, rt::IoFormat::kChw16);
  EXPECT_EQ(adopted.network_shape, (Shape{1, 3, 20, 20}));
  rt::TensorDesc small = good;
  small.size -= 1;
  EXPECT_NE(error_of([&] { rt::adopt_cudla_desc(small); }).find("do not lay the tensor out inside"),
            std::string::npos);
  rt::TensorDesc overlap = rt::make_desc("y", {1, 8, 4, 4}, {DType::kF16, rt::IoFormat::kDlaLinear}, 64);
  overlap.stride[2] = overlap.stride[1];  // channel planes one line apart
  EXPECT_NE(error_of([&] { rt::adopt_cudla_desc(overlap); }).find("do not lay the tensor out inside"),
            std::string::npos);
  rt::TensorDesc f32 = good;
  f32.data_type = 1;  // CUDLA_DATA_TYPE_FLOAT
  EXPECT_NE(error_of([&] { rt::adopt_cudla_desc(f32); }).find("cuDLA data type 1"), std::string::npos);
}
