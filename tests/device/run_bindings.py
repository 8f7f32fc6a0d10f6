"""NVIDIA's unmodified cuda.bindings.cudla driving dlakit's libcudla.so.1 (emulated DLA) on the GPU machine.
Hybrid-mode steps on a real model's loadable; for INT8 the output must equal, byte for byte, what dlakit's
C client computes on this machine's CPU executor (expected_out.bin, written by run_gpu.sh before this runs:
the INT8 classifier is a float host step whose sums follow the CPU's SIMD kernels, so another machine's
CPU may round it differently); for FP16, what the C client produced on the development machine, within
rounding (pinned buffers run on the CUDA executor, whose float sums run in another order: cosine >=
0.99999, docs/runtime.md).
Then error paths through the binding."""
import ctypes, os, sys, time
import numpy as np
from cuda.bindings import cudla

here = os.path.dirname(os.path.abspath(__file__))
print("cuda.bindings.cudla from", cudla.__file__)
print("len(Status) =", len(cudla.Status))
print("get_version() =", cudla.get_version(), " device_get_count() =", cudla.device_get_count())

from cuda.bindings import runtime as cudart

def aligned(nbytes, align=64):  # pageable host memory (numpy)
    raw = np.zeros(nbytes + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes]

def pinned(nbytes):  # CUDA pinned host memory: what cuDLA's hybrid mode registers (numpy view on it)
    err, ptr = cudart.cudaMallocHost(nbytes)
    assert err == cudart.cudaError_t.cudaSuccess, err
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))

h = cudla.create_device(1, cudla.Mode.CUDA_DLA)
blob = np.fromfile(os.path.join(here, "model.dla"), np.uint8)
m = cudla.module_load_from_memory(h, blob, blob.size, 0)
nin = cudla.module_get_attributes(m, cudla.ModuleAttributeType.NUM_INPUT_TENSORS)
nout = cudla.module_get_attributes(m, cudla.ModuleAttributeType.NUM_OUTPUT_TENSORS)
din = cudla.module_get_attributes(m, cudla.ModuleAttributeType.INPUT_TENSOR_DESCRIPTORS)
dout = cudla.module_get_attributes(m, cudla.ModuleAttributeType.OUTPUT_TENSOR_DESCRIPTORS)
for d in din + dout:
    print(f"  tensor {d.name}: size {d.size_}, n{d.n} c{d.c} h{d.h} w{d.w}, format {d.data_format}, type {d.data_type}, "
          f"stride {list(d.stride[:4])}")
inb = pinned(din[0].size_)
inb[:] = np.fromfile(os.path.join(here, "in.bin"), np.uint8)
outb = pinned(dout[0].size_)
pin = cudla.mem_register(h, inb.ctypes.data, inb.size, 0)
pout = cudla.mem_register(h, outb.ctypes.data, outb.size, 0)
task = cudla.Task()
task.module_handle = m
task.input_tensor = [pin]
task.output_tensor = [pout]
t0 = time.time()
cudla.submit_task(h, task.ptr, 1, 0, 0)  # pinned buffers: queued on the default stream, in stream order
cudart.cudaDeviceSynchronize()
print(f"submit_task + sync: {1000 * (time.time() - t0):.1f} ms, get_last_error = {cudla.get_last_error(h)}")
expected = np.fromfile(os.path.join(here, "expected_out.bin"), np.uint8)
identical = np.array_equal(outb, expected)
print("output identical to the C client's:", identical)
if os.path.basename(here) == "int8":
    same = identical
else:
    a, b = outb.view(np.float16).astype(np.float64), expected.view(np.float16).astype(np.float64)
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    print(f"fp16: {int((a != b).sum())} of {a.size} values differ, cosine {cos:.9f} (needs >= 0.99999)")
    same = cos >= 0.99999

errors = []
def expect(status_name, fn, *args):
    try:
        fn(*args)
        errors.append(f"{fn.__name__}{args}: no error, expected {status_name}")
    except cudla.CudlaError as e:
        ok = status_name in str(e)
        print(f"  {fn.__name__}: {e} {'(as expected)' if ok else '(EXPECTED ' + status_name + ')'}")
        if not ok:
            errors.append(str(e))
print("error paths through the binding:")
expect("ErrorInvalidDevice", cudla.create_device, 5, 0)
expect("ErrorUnsupportedOperation", cudla.create_device, 0, cudla.Mode.STANDALONE)
expect("ErrorInvalidParam", cudla.set_task_timeout_in_ms, h, 0)
expect("ErrorMemoryRegistered", cudla.mem_register, h, inb.ctypes.data, inb.size, 0)
bad = pinned(128)
expect("ErrorInvalidAddress", cudla.mem_register, h, bad.ctypes.data + 8, 64, 0)
pageable = aligned(128)  # malloc'ed memory: cuDLA's hybrid mode does not take it, nor does dlakit on a GPU
expect("ErrorInvalidAddress", cudla.mem_register, h, pageable.ctypes.data, 128, 0)
h2 = cudla.create_device(0, cudla.Mode.CUDA_DLA)
junk = np.frombuffer(b"not a loadable, a TensorRT engine say" * 4, np.uint8)
expect("ErrorUmd", cudla.module_load_from_memory, h2, junk, junk.size, 0)
expect("ErrorUnsupportedOperation", cudla.module_load_from_memory, h, blob, blob.size, 0)
cudla.destroy_device(h2)
cudla.mem_unregister(h, pin)
cudla.mem_unregister(h, pout)
cudla.module_unload(m, 0)
cudla.destroy_device(h)
expect("ErrorInvalidDevice", cudla.destroy_device, h)
print("RESULT:", "PASS" if same and not errors else "FAIL", errors)
sys.exit(0 if same and not errors else 1)
