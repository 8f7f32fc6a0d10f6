// Runs an ONNX model on ONNX Runtime (npm onnxruntime-node, CPU EP) as dlakit's reference runtime.
// Usage: node ort_run.js MODEL OUT_DIR [--threads N] [--iterations N] [--profile] name=input.npy ...
// --profile: ONNX Runtime's own per-node profile of the runs (its JSON trace) is written to OUT_DIR and
// named in the result ("profile"); bench/layers_vs_ort.py reads it.
// Writes OUT_DIR/<k>.npy for output k (in the session's output order) and prints JSON:
// {"outputs":[{"name":..., "file":...}], "latency_ms": {"mean":..., "min":..., "median":...},
//  "cpu_ms": {"median":...}} (process CPU time per run: the steadier figure on a shared machine)
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', '.cache', 'node', 'node_modules', 'onnxruntime-node'));

const DTYPES = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
                '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array]};

function readNpy(file) {
  const b = fs.readFileSync(file);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = b.slice(off, off + hlen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [type, Arr] = DTYPES[descr];
  const data = b.slice(off + hlen);
  const copy = new Uint8Array(data.length);
  copy.set(data);
  return new ort.Tensor(type, new Arr(copy.buffer), shape);
}

function writeNpy(file, t) {
  const descr = {float32: '<f4', int64: '<i8', int32: '<i4', uint8: '|u1', int8: '|i1', bool: '|b1'}[t.type];
  const shape = '(' + t.dims.join(', ') + (t.dims.length === 1 ? ',' : '') + ')';
  let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = (64 - ((10 + h.length + 1) % 64)) % 64;
  h = h + ' '.repeat(pad) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0; head.writeUInt16LE(h.length, 8);
  const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'), data]));
}

async function main() {
  const args = process.argv.slice(2);
  const model = args.shift(), outDir = args.shift();
  let threads = 2, iterations = 1, profile = false;
  const feeds = {};
  while (args.length) {
    const a = args.shift();
    if (a === '--threads') threads = Number(args.shift());
    else if (a === '--iterations') iterations = Number(args.shift());
    else if (a === '--profile') profile = true;
    else { const eq = a.indexOf('='); feeds[a.slice(0, eq)] = readNpy(a.slice(eq + 1)); }
  }
  fs.mkdirSync(outDir, {recursive: true});
  const session = await ort.InferenceSession.create(model, {executionProviders: ['cpu'], intraOpNumThreads: threads,
                                                            interOpNumThreads: 1, graphOptimizationLevel: 'all',
                                                            enableProfiling: profile,
                                                            profileFilePrefix: path.join(outDir, 'ort_profile')});
  let out = await session.run(feeds);  // warm-up
  const times = [], cpu = [];
  for (let i = 0; i < iterations; ++i) {
    const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e3);
  }
  if (profile) await session.release();  // the trace is complete once the session ends
  const result = {outputs: [], latency_ms: {mean: times.reduce((a, b) => a + b, 0) / times.length, min: Math.min(...times),
                                            median: times.slice().sort((a, b) => a - b)[Math.floor(times.length / 2)]},
                  cpu_ms: {median: cpu.slice().sort((a, b) => a - b)[Math.floor(cpu.length / 2)]}};
  session.outputNames.forEach((name, k) => {
    const file = path.join(outDir, `${k}.npy`);
    writeNpy(file, out[name]);
    result.outputs.push({name, file});
  });
  if (profile) {
    const traces = fs.readdirSync(outDir).filter(f => f.startsWith('ort_profile') && f.endsWith('.json'));
    traces.sort((a, b) => fs.statSync(path.join(outDir, b)).mtimeMs - fs.statSync(path.join(outDir, a)).mtimeMs);
    result.profile = traces.length ? path.join(outDir, traces[0]) : null;
  }
  console.log(JSON.stringify(result));
}

main().catch(e => { console.error('ort_run: ' + e.message); process.exit(1); });
