set -uo pipefail
tar xJf devpack/devrun.tar.xz || exit 9
export LD_LIBRARY_PATH=$PWD/devrun/lib
python3 - <<'PY' || exit 8
import torch, torchvision, warnings
warnings.filterwarnings("ignore")
torch.manual_seed(0)
m = torchvision.models.resnet50(weights=None).eval()
torch.onnx.export(m, torch.randn(32, 3, 224, 224), "/tmp/r50.onnx", opset_version=13, input_names=["input"], dynamo=False)
PY
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
"$NCU" --clock-control none --kernel-name regex:conv_half_mma_kernel --launch-skip 0 --launch-count 53 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats --section InstructionStats \
  devrun/dlakit bench --config=gpu-fp16 --onnx /tmp/r50.onnx --warmUp 0 --iterations 1 --duration 0 > $OUT/ncu_detail.txt 2>&1
rc=$?
grep -c "conv_half_mma_kernel" $OUT/ncu_detail.txt
exit $rc
