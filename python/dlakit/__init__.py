"""dlakit: NVIDIA's Deep Learning Accelerator (DLA) off the board, from Python.

    import dlakit, numpy as np
    model = dlakit.load("det.onnx", shapes={"x": (1, 3, 640, 640)})
    report = dlakit.inspect(model, target="orin")          # placement, reasons and fixes per layer
    calib = dlakit.calibrate(model, ({"x": a} for a in arrays))
    engine = dlakit.build(model, int8=True, calib=calib)    # the bytes `dlakit build` writes
    outputs = dlakit.run(engine, {"x": x})                  # the emulated DLA; {name: ndarray}

Every call runs the same library code as the `dlakit` command line, so both give the same results.
Errors raise dlakit.Error with `.status` (dlakit's or cuDLA's status name) and the message the CLI prints.
"""
from __future__ import annotations

import json as _json
import os as _os
import sys as _sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._core import Error

__all__ = ["Error", "load", "load_engine", "inspect", "calibrate", "build", "run", "compare", "Model",
           "Report", "Layer", "Reason", "Segment", "Calibration", "Loadable", "Comparison", "TensorInfo"]


# --- small types

@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str  # "f32", "f16", "i8", "u8", "i32", "i64", "bool"
    shape: Tuple[int, ...]


@dataclass(frozen=True)
class Reason:
    """Why a layer cannot run on the DLA: the rule's code, the field, its value, the limit and a fix."""
    code: str
    field: str
    actual: str
    limit: str
    fix: str
    rule: str = ""        # the DLA rule it cites (docs/inspect.md, "Where each rule comes from")
    confidence: str = ""  # documented | observed | assumed
    source: str = ""


@dataclass
class Layer:
    index: int
    name: str
    op: str
    output_shape: str
    device: str  # "DLA" or "GPU"
    precision: str  # "fp16", "int8" or "fp32" (GPU)
    dla_layer: str
    decision: str
    segment: int
    macs: int
    reasons: List[Reason]
    notes: List[str]
    fused_activation: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)  # fields newer reports add (e.g. predictions)


@dataclass
class Segment:
    id: int
    device: str
    macs: int
    ends_because: str
    layers: List[str]
    inputs: List[str]
    outputs: List[str]


class _Progress:
    """A bar on stderr like the CLI's ("calibrating [#####.....] 12/64"); shown when asked, or by default
    when stderr is a terminal."""

    def __init__(self, what: str, total: Optional[int], show: Optional[bool]):
        self.what, self.total = what, total
        self.show = _sys.stderr.isatty() if show is None else bool(show)

    def __call__(self, done: int, total: Optional[int] = None) -> None:
        if not self.show:
            return
        total = total if total is not None else self.total
        if total:
            filled = done * 30 // total
            _sys.stderr.write(f"\r  {self.what} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
            if done == total:
                _sys.stderr.write("\n")
        else:
            _sys.stderr.write(f"\r  {self.what} {done}")
        _sys.stderr.flush()

    def close(self) -> None:
        if self.show and not self.total:
            _sys.stderr.write("\n")


# --- the model

class Model:
    """An imported ONNX model (dynamic input dimensions pinned by `shapes`)."""

    def __init__(self, core: "_core.Model"):
        self._core = core
        self.path: str = core.path
        self.inputs = [TensorInfo(n, d, tuple(s)) for n, d, s in core.inputs]
        self.outputs = [TensorInfo(n, d, tuple(s)) for n, d, s in core.outputs]
        self.op_histogram: Dict[str, int] = dict(core.op_histogram)
        self.macs: int = core.macs
        self.parameters: int = core.parameters
        self.layers: int = core.layers

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.inputs)
        return f"<dlakit.Model {self.path!r} ({ins}), {self.layers} layers, {self.macs / 1e9:.3f} GMACs>"


def load(path: Union[str, "_os.PathLike[str]"], shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Model:
    """Imports an ONNX model. `shapes` pins dynamic input dimensions: {"x": (1, 3, 48, 320)}."""
    return Model(_core.load(_os.fspath(path), {k: [int(d) for d in v] for k, v in (shapes or {}).items()}))


# --- placement

_OVERRIDES = {  # keyword -> PlacementRequest field (trtexec's flag in the comment)
    "layer_device_types": "layer_devices",  # --layerDeviceTypes
    "layer_precisions": "layer_precisions",  # --layerPrecisions
    "op_device_types": "op_devices",  # --opDeviceTypes
    "op_precisions": "op_precisions",  # --opPrecisions
}
_PLACEMENT_KEYWORDS = sorted(list(_OVERRIDES) + ["overrides", "dla_core", "disable_passes", "no_passes"])


def _spec(value: Union[str, Mapping[str, str], Sequence[Tuple[str, str]], None]) -> str:
    """trtexec's "name:GPU,conv*:DLA" from a string, a {pattern: value} dict or (pattern, value) pairs."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    pairs = value.items() if isinstance(value, Mapping) else value
    return ",".join(f"{k}:{v}" for k, v in pairs)


def _place(model: Model, target: str, standalone: bool, int8: bool, overrides: Dict[str, Any]):
    unknown = sorted(set(overrides) - set(_PLACEMENT_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown keyword(s) {', '.join(unknown)}; placement keywords: "
                        f"{', '.join(_PLACEMENT_KEYWORDS)}")
    if not isinstance(model, Model):
        raise TypeError(f"expected a dlakit.Model (from dlakit.load), got {type(model).__name__}")
    r = _core.PlacementRequest()
    r.target, r.standalone, r.int8 = target, bool(standalone), bool(int8)
    r.dla_core = int(overrides.get("dla_core", 0))
    for key, attr in _OVERRIDES.items():
        setattr(r, attr, _spec(overrides.get(key)))
    if overrides.get("overrides"):
        r.overrides_file = _os.fspath(overrides["overrides"])
    return _core.place(model._core, r, not overrides.get("no_passes", False),
                       list(overrides.get("disable_passes", [])))


class Report:
    """`dlakit inspect`'s answer: per-layer device, precision and reasons; segments; summary."""

    def __init__(self, placed):
        self._placed = placed
        self._json = placed.json()
        j = _json.loads(self._json)
        known = Layer.__dataclass_fields__
        self.layers: List[Layer] = []
        for l in j["layers"]:
            fields = {k: v for k, v in l.items() if k in known and k != "reasons"}
            self.layers.append(Layer(**fields, reasons=[Reason(**r) for r in l["reasons"]],
                                     extra={k: v for k, v in l.items() if k not in known}))
        self.segments = [Segment(s["id"], s["device"], s["macs"], s["ends_because"], s.get("layers", []),
                                 s.get("inputs", []), s.get("outputs", [])) for s in j["segments"]]
        self.summary: Dict[str, Any] = j["summary"]
        self.remarks: List[Dict[str, Any]] = j["remarks"]
        self.target: str = j["target"]
        self.mode: str = j["mode"]

    @property
    def standalone_possible(self) -> bool:
        return bool(self.summary["standalone_possible"])

    @property
    def recommendation(self) -> str:
        return self.summary["recommendation"]

    def to_json(self) -> str:
        """The document `dlakit inspect --json` prints (schema: docs/inspect.md)."""
        return self._json

    def text(self) -> str:
        """The table `dlakit inspect` prints."""
        return self._placed.text()

    def explain(self, layer: str) -> str:
        """`dlakit inspect --explain LAYER`."""
        return self._placed.explain(layer)

    def to_html(self) -> str:
        """The self-contained page `dlakit inspect --html` writes."""
        return self._placed.html()

    def save_html(self, path: Union[str, "_os.PathLike[str]"]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_html())

    def __repr__(self) -> str:
        s = self.summary
        return (f"<dlakit.Report {s['dla_layers']}/{s['total_layers']} layers on the DLA, "
                f"{len(self.segments)} segment(s), standalone {'possible' if self.standalone_possible else 'not possible'}>")


def inspect(model: Model, target: str = "orin", standalone: bool = False, int8: bool = False,
            **overrides: Any) -> Report:
    """Per-layer DLA placement with every reason and fix, as `dlakit inspect`.

    Keywords: layer_device_types / layer_precisions / op_device_types / op_precisions (trtexec strings such
    as "head*:GPU", or {pattern: value}), overrides (a JSON file from `dlakit compare --fix --apply`),
    dla_core, disable_passes (list of pass names), no_passes. With standalone=True, a network that cannot be
    one DLA graph raises dlakit.Error listing every offending layer."""
    return Report(_place(model, target, standalone, int8, overrides))


# --- calibration

class Calibration:
    """INT8 ranges per tensor, savable as a TensorRT calibration cache (usable with trtexec --calib)."""

    def __init__(self, table, samples: int = 0):
        self._table = table
        self.samples = samples
        self.algorithm: str = table.algorithm
        self.scales: Dict[str, float] = dict(table.scales)
        self.ranges: Dict[str, float] = {k: v * 127.0 for k, v in self.scales.items()}  # amax = scale * 127

    @classmethod
    def load(cls, path: Union[str, "_os.PathLike[str]"]) -> "Calibration":
        """Reads a TensorRT calibration cache (dlakit's or trtexec's)."""
        return cls(_core.read_calib_cache(_os.fspath(path)))

    def cache_text(self) -> str:
        return self._table.cache_text()

    def save(self, path: Union[str, "_os.PathLike[str]"]) -> None:
        self._table.save(_os.fspath(path))

    def __repr__(self) -> str:
        return f"<dlakit.Calibration {self.algorithm}, {len(self.ranges)} tensors, {self.samples} samples>"


_ALGOS = ("entropy2", "minmax", "percentile", "mse")


def calibrate(model: Model, samples: Iterable[Mapping[str, Any]], algo: str = "entropy2",
              percentile: float = 99.99, trt_version: int = 100300, progress: Optional[bool] = None,
              target: str = "orin", **overrides: Any) -> Union[Calibration, Dict[str, Calibration]]:
    """TensorRT-style INT8 calibration, as `dlakit calibrate`: one FP32 pass per sample (a dict
    {input_name: ndarray}; a list or any iterator, consumed once), then the calibrator's ranges.
    algo: entropy2 (TensorRT's), minmax, percentile, mse, or "all" (a dict of the four)."""
    placed = _place(model, target, False, False, overrides)
    total = len(samples) if hasattr(samples, "__len__") else None
    bar = _Progress("calibrating", total, progress)
    try:
        tables, _maxes, count = _core.calibrate(placed, iter(samples), algo, percentile, trt_version, bar)
    finally:
        bar.close()
    results = [Calibration(t, count) for t in tables]
    return dict(zip(_ALGOS, results)) if algo == "all" else results[0]


# --- build and run

class Loadable:
    """A built engine: a DLA loadable (standalone) or a hybrid plan (DLA + GPU segments)."""

    def __init__(self, data: bytes, is_plan: bool = False, int8_layers: int = 0):
        self._bytes, self.is_plan, self.int8_layers = bytes(data), is_plan, int8_layers

    @classmethod
    def load(cls, path: Union[str, "_os.PathLike[str]"]) -> "Loadable":
        with open(path, "rb") as f:
            data = f.read()
        return cls(data, _core.is_plan(data))

    def save(self, path: Union[str, "_os.PathLike[str]"]) -> None:
        with open(path, "wb") as f:
            f.write(self._bytes)

    def __bytes__(self) -> bytes:
        return self._bytes

    def __len__(self) -> int:
        return len(self._bytes)

    def __repr__(self) -> str:
        kind = "hybrid plan" if self.is_plan else "DLA loadable"
        return f"<dlakit.Loadable {kind}, {len(self._bytes)} bytes>"


def load_engine(path: Union[str, "_os.PathLike[str]"]) -> Loadable:
    """A .dla loadable or hybrid plan from a file (dlakit's, or trtexec --buildDLAStandalone's)."""
    return Loadable.load(path)


def _calib_table(calib) -> Optional[Any]:
    if calib is None:
        return None
    if isinstance(calib, Calibration):
        return calib._table
    return _core.read_calib_cache(_os.fspath(calib))


def build(model: Model, int8: bool = False, calib: Union[Calibration, str, None] = None,
          standalone: bool = True, input_formats: Optional[str] = None, output_formats: Optional[str] = None,
          target: str = "orin", **overrides: Any) -> Loadable:
    """A DLA loadable, as `dlakit build` (the same bytes). standalone=False builds a hybrid plan with GPU
    fallback (`--allowGPUFallback`). input_formats / output_formats take trtexec's syntax ("fp16:chw16",
    "int8:dla_hwc4", one per tensor or one for all). calib: a Calibration or a cache file."""
    placed = _place(model, target, standalone, int8, overrides)
    data, is_plan, int8_layers = _core.build(placed, int8, _calib_table(calib) if int8 else None,
                                             input_formats or "", output_formats or "")
    return Loadable(data, is_plan, int8_layers)


def run(model_or_loadable: Union[Model, Loadable, bytes], feeds: Mapping[str, Any], backend: str = "cpu",
        dla_core: int = 0, calib: Union[Calibration, str, None] = None) -> Dict[str, Any]:
    """Runs on {input_name: ndarray} and returns {output_name: ndarray}: a Model on the FP32 reference
    engine; a Loadable on the emulated DLA (backend "cpu"), or through a cuDLA library ("cudla" = the
    system's libcudla.so.1, "cudla:PATH"). calib gives int8 I/O scales of loadables dlakit did not build."""
    feeds = dict(feeds)
    if isinstance(model_or_loadable, Model):
        if backend != "cpu":
            raise ValueError("a Model runs on the reference engine; build a Loadable for other backends")
        return _core.run_model(model_or_loadable._core, feeds)
    data = bytes(model_or_loadable)
    engine = _core.Engine(data, backend, int(dla_core), _calib_table(calib))
    return engine.run(feeds)


# --- compare

class Comparison(list):
    """`dlakit compare`'s per-layer table: a list of dicts (layer, op, tensor, mode, cosine, rel_l2,
    max_abs, sqnr_db, own_rel_l2, own_cosine, step, flagged, note), graph order. Also: .outputs, .samples,
    .fix (the overrides kept, with fix=True), .after (the table after the fix), .to_json(), .save_html()."""

    def __init__(self, document: str, html: str):
        j = _json.loads(document)
        super().__init__(j["before"]["layers"])
        self.outputs: List[Dict[str, Any]] = j["before"]["outputs"]
        self.samples: int = j["before"]["samples"]
        self.fix: Optional[Dict[str, str]] = j.get("fix")
        self.after: Optional[List[Dict[str, Any]]] = j["after"]["layers"] if "after" in j else None
        self._json, self._html = document, html

    def to_json(self) -> str:
        """The document `dlakit compare --json` prints."""
        return self._json

    def to_html(self) -> str:
        return self._html

    def save_html(self, path: Union[str, "_os.PathLike[str]"]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._html)


def compare(model: Model, samples: Iterable[Mapping[str, Any]], int8: bool = False,
            calib: Union[Calibration, str, None] = None, fix: bool = False, fix_rounds: int = 3,
            fix_target: float = 0.0, gpu_int8: bool = False, target: str = "orin", standalone: bool = False,
            progress: Optional[bool] = None, **overrides: Any) -> Comparison:
    """The emulated DLA (INT8 with calib, else FP16) against the FP32 reference on the same samples, per
    layer, as `dlakit compare`; fix=True proposes and measures overrides (`--fix`)."""
    placed = _place(model, target, standalone, int8, overrides)
    data = list(samples)
    bar = _Progress("comparing", None, progress)
    document, html = _core.compare(placed, data, int8, _calib_table(calib), gpu_int8, fix, fix_rounds,
                                   fix_target, bar)
    return Comparison(document, html)
