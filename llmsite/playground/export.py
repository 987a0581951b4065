"""Export a trained artifact for the browser: float16 (or int8) weights and a JSON header, cached like figures.

Cache entry ``.cache/playground/<name>/<key>/`` holds ``header.json``, ``weights.bin`` and ``inputs.json``.
Key = hash of: this pipeline's version, the format written here (this file's bytes), the artifact's name, its
weight type and its own key (``llmsite.artifacts.key_for``: the code that trains and saves it, the library
versions). The same trained file gives the same bytes: tensors in a fixed order (``expected_tensors``), each
rounded to IEEE float16 (round to nearest even) and written little-endian; the header is sorted, compact JSON.

**int8.** A module of ``code/`` may list some of the artifacts it declares in a module-level literal
``PLAYGROUND_INT8 = ("name", ...)`` (``weights_dtype``): models shown side by side are downloaded together, and
int8 halves what a reader waits for. Then ``"dtype": "int8"``: every matrix (2-D tensor) is stored as one float32
scale per row (``max|row| / 127``, 1 for a row of zeros) followed by its codes ``round(w / scale)`` in [-127, 127]
as int8, row by row: symmetric per-row absmax quantization, the scheme of ``code/quantize.py``'s ``quantize``
with 8 bits (tests/playground checks the codes are that function's). Vectors (biases, LayerNorm) stay float16.
Each tensor's entry then has ``"dtype"`` and ``"offset"`` in **bytes** (and ``"scales"``, the byte offset of its
scales); in a float16 file ``offset`` counts elements, as it always has, so a float16 export is unchanged.

The header (``FORMAT``)::

    {"format": FORMAT, "name": ..., "params": n, "config": {...}, "dtype": "float16", "layer_norm_eps": 1e-05,
     "activation": "gelu", "tensors": [{"name", "shape", "offset"}],      # offset and size in elements
                                                                          # (int8: see above)
     "vocab": {"bytes": 256, "chars": [...]},                              # ids 0..255 bytes, then the chars
     "weights": {"file": "<name>.<digest12>.bin", "bytes": n, "sha256": hex},
     "task": {...}}                                                        # optional, see below

``task`` is present only when the saved file carries one (``check_task`` validates it strictly; a bad one raises
ExportError naming the artifact). The one kind so far, ``acrostic`` (``code/acrostic.py: playground_task``)::

    {"kind": "acrostic", "template": "藏头：{heads}\n", "heads": 4, "tokens": 25, "line_ends": "，。",
     "line_chars": 5, "example": "春夏秋冬"}

The browser then asks for ``heads`` characters instead of a free prompt and writes ``template`` with them filled in.
An older ``playground.js`` ignores the field, so the format stays ``llm-playground/1``.

Planning (``plan``) only hashes; ``export`` imports torch and runs in ``python -m llmsite.playground``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TextIO

from llmsite import artifacts
from llmsite import cache as build_cache
from llmsite.paths import CACHE, rel

PIPELINE_VERSION = "1"
FORMAT = "llm-playground/1"
CACHE_DIR = CACHE / "playground"
HEADER = "header.json"
WEIGHTS = "weights.bin"
TARGET = "playground"  # the folder of the site that serves them
N_BYTES = 256  # byte tokens 0..255, as in code/tokenizer.py
MAX_WEIGHT_BYTES = 2_000_000  # what a reader downloads on the first press; a larger model needs another format
INT8_DECLARATION = "PLAYGROUND_INT8"
DTYPES = ("float16", "int8")
QMAX = 127  # int8 codes in [-127, 127], symmetric


class ExportError(RuntimeError):
    pass


@dataclass
class Planned:
    artifact: artifacts.Artifact
    key: build_cache.Key
    cached: bool

    @property
    def name(self) -> str:
        return self.artifact.name

    def entry(self, cache_dir: Path | None = None) -> Path:
        return (cache_dir or CACHE_DIR) / self.name / self.key.digest

    def header_path(self, cache_dir: Path | None = None) -> Path:
        return self.entry(cache_dir) / HEADER

    def weights_path(self, cache_dir: Path | None = None) -> Path:
        return self.entry(cache_dir) / WEIGHTS


def weights_dtype(artifact: artifacts.Artifact) -> str:
    """"int8" if the module declaring ``artifact`` lists it in ``PLAYGROUND_INT8``, else "float16"."""
    return "int8" if artifact.name in _int8_names(artifact.module, artifact.module.stat().st_mtime_ns) else "float16"


@lru_cache(maxsize=64)
def _int8_names(module: Path, mtime_ns: int) -> frozenset[str]:
    text = module.read_text(encoding="utf-8")
    if INT8_DECLARATION not in text:
        return frozenset()
    tree = ast.parse(text, filename=str(module))
    declared = {a.name for a in artifacts.discover(module.parent).values() if a.module == module.resolve()}
    found: set[str] = set()
    for node, value in artifacts.literal_assignments(tree, INT8_DECLARATION):
        where = f"{rel(module)}:{node.lineno}"
        if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
            raise ExportError(f"{where}: {INT8_DECLARATION} 应是产物名字的字面量元组，例如 (\"aligned-sft\",)")
        unknown = [v for v in value if v not in declared]
        if unknown:
            raise ExportError(f"{where}: {INT8_DECLARATION} 里的 {'、'.join(unknown)} 不是这个文件的 BUILD_ARTIFACTS "
                              f"声明的产物（有：{'、'.join(sorted(declared)) or '（无）'}）")
        found.update(value)
    return frozenset(found)


def key_for(artifact: artifacts.Artifact) -> build_cache.Key:
    inputs = {
        "pipeline": PIPELINE_VERSION,
        "format": FORMAT,
        "exporter": build_cache.file_digest(Path(__file__)),
        "artifact": artifact.name,
        "dtype": weights_dtype(artifact),
        f"artifact:{artifact.name}": artifacts.key_for(artifact).digest,
    }
    return build_cache.key(inputs)


def plan(names: list[str], force: bool = False, cache_dir: Path | None = None) -> list[Planned]:
    declared = artifacts.discover()
    out = []
    for name in names:
        artifact = declared[name]
        key = key_for(artifact)
        item = Planned(artifact, key, False)
        item.cached = not force and item.header_path(cache_dir).is_file() and item.weights_path(cache_dir).is_file()
        out.append(item)
    return out


def header_uri(name: str) -> str:
    return f"{TARGET}/{name}.json"


def weights_uri(name: str, header: dict[str, Any]) -> str:
    return f"{TARGET}/{header['weights']['file']}"


def expected_tensors(config: dict[str, Any]) -> list[str]:
    """The parameter names the browser's forward pass reads (TinyTransformer with learned positions)."""
    names = ["embed.weight", "pos.embedding.weight"]
    for i in range(int(config["n_layers"])):
        p = f"blocks.{i}."
        names += [p + "ln.weight", p + "ln.bias", p + "attn.qkv.weight", p + "attn.qkv.bias",
                  p + "attn.out.weight", p + "attn.out.bias"]
        if config.get("mlp"):
            names += [p + "mlp.0.weight", p + "mlp.0.bias", p + "mlp.1.up.weight", p + "mlp.1.up.bias",
                      p + "mlp.1.down.weight", p + "mlp.1.down.bias"]
    return [*names, "ln_f.weight", "ln_f.bias", "unembed.weight", "unembed.bias"]


def int8_rows(t: Any) -> tuple[Any, Any]:
    """(scales float32 (rows,), codes int8 (rows, cols)) of a float32 matrix: per-row symmetric absmax."""
    import torch

    absmax = t.abs().amax(dim=1)
    scales = torch.where(absmax > 0, absmax / QMAX, torch.ones_like(absmax))
    codes = torch.round(t * (1.0 / scales[:, None])).clamp(-QMAX, QMAX).to(torch.int8)
    return scales, codes


def encode(name: str, saved: dict[str, Any], dtype: str = "float16") -> tuple[dict[str, Any], bytes]:
    """(header, weights) for the contents of a ``save_poem_gpt``-style file: config, state_dict, chars (and an
    optional task, ``check_task``); ``dtype`` "float16" or "int8" (see the module's docstring)."""
    import torch

    if dtype not in DTYPES:
        raise ExportError(f"产物 {name}：权重类型应是 {'、'.join(DTYPES)} 之一，收到 {dtype!r}")

    missing = [k for k in ("config", "state_dict", "chars") if k not in saved]
    if missing:
        raise ExportError(f"产物 {name} 不能放进浏览器：保存的文件里缺少 {'、'.join(missing)}"
                          "（要有 config、state_dict 和 chars，见 code/gpt_from_scratch.py 的 save_poem_gpt）")
    config = dict(saved["config"])
    if config.get("positions") != "learned":
        raise ExportError(f"产物 {name} 用的是 positions={config.get('positions')!r}：浏览器里只实现了可学习的位置嵌入")
    state = saved["state_dict"]
    expected = expected_tensors(config)
    if sorted(state) != sorted(expected):
        extra, absent = sorted(set(state) - set(expected)), sorted(set(expected) - set(state))
        raise ExportError(f"产物 {name} 的参数和浏览器里的前向计算对不上：多了 {extra}，缺了 {absent}")
    chars = [str(c) for c in saved["chars"]]
    if N_BYTES + len(chars) != int(config["vocab_size"]):
        raise ExportError(f"产物 {name} 的词表有 {N_BYTES} + {len(chars)} 项，"
                          f"与 vocab_size = {config['vocab_size']} 不符")
    task = check_task(name, saved["task"], config, chars) if saved.get("task") is not None else None
    tensors, blobs, offset, at = [], [], 0, 0  # offset in elements, at in bytes
    for tensor_name in expected:  # a fixed order, the one the browser reads
        t = state[tensor_name].detach().to(torch.float32)
        if not torch.isfinite(t).all():
            raise ExportError(f"产物 {name} 的 {tensor_name} 里有 inf 或 NaN")
        spec: dict[str, Any] = {"name": tensor_name, "shape": list(t.shape)}
        if dtype == "int8" and t.dim() == 2:
            scales, codes = int8_rows(t)
            parts = [scales.numpy().astype("<f4").tobytes(), codes.numpy().tobytes()]
            spec.update(dtype="int8", scales=at, offset=at + len(parts[0]))
        else:
            half = t.to(torch.float16)
            if not torch.isfinite(half).all():
                raise ExportError(f"产物 {name} 的 {tensor_name} 超出了 float16 能表示的范围")
            parts = [half.numpy().astype("<f2").tobytes()]
            if dtype == "int8":
                spec.update(dtype="float16", offset=at)
            else:
                spec["offset"] = offset
        blobs += parts
        at += sum(len(b) for b in parts)
        tensors.append(spec)
        offset += t.numel()
    weights = b"".join(blobs)
    if len(weights) > MAX_WEIGHT_BYTES:
        raise ExportError(f"产物 {name} 的权重有 {len(weights):,} 字节，超过 {MAX_WEIGHT_BYTES:,} 字节的上限")
    digest = hashlib.sha256(weights).hexdigest()
    header = {
        "format": FORMAT,
        "name": name,
        "params": offset,
        "config": config,
        "dtype": dtype,
        "layer_norm_eps": 1e-5,  # nn.LayerNorm's default, as code/tiny_transformer.py uses it
        "activation": "gelu",  # exact GELU, x * Phi(x) (code/feed_forward.py)
        "tensors": tensors,
        "vocab": {"bytes": N_BYTES, "chars": chars},
        "weights": {"file": f"{name}.{digest[:12]}.bin", "bytes": len(weights), "sha256": digest},
    }
    if task is not None:
        header["task"] = task
    return header, weights


TASK_KEYS = {"acrostic": ("kind", "template", "heads", "tokens", "line_ends", "line_chars", "example")}
PLACEHOLDER = "{heads}"
MAX_TASK_TEXT = 64  # characters: a template and an example are a line, not a page


def _plain(text: str, allow_newline: bool = False) -> str | None:
    """Why ``text`` is not a short plain-text string for the page (None if it is). The browser writes it with
    textContent, never as HTML; this keeps markup, controls and invisible characters out of the header anyway."""
    from llmsite.content.plaintext import problems

    if not text or len(text) > MAX_TASK_TEXT:
        return f"应是 1 到 {MAX_TASK_TEXT} 个字符"
    controls = [c for c in text if (c < " " or c == "\x7f") and not (allow_newline and c == "\n")]
    if controls:
        return f"含有控制字符 {controls[0]!r}"
    found = problems(text.replace("\n", " ") if allow_newline else text, "title")
    return found[0][0] if found else None


def check_task(name: str, task: Any, config: dict[str, Any], chars: list[str]) -> dict[str, Any]:
    """The task record of artifact ``name``, checked field by field against the model it comes with."""
    def bad(message: str) -> ExportError:
        return ExportError(f"产物 {name} 的 task 不对：{message}")

    if not isinstance(task, dict):
        raise bad(f"应是字典，收到 {type(task).__name__}")
    kind = task.get("kind")
    if kind not in TASK_KEYS:
        raise bad(f"kind 应是 {'、'.join(TASK_KEYS)} 之一，收到 {kind!r}（浏览器只认识这些）")
    keys = TASK_KEYS[kind]
    if sorted(task) != sorted(keys):
        extra, absent = sorted(set(task) - set(keys)), sorted(set(keys) - set(task))
        raise bad(f"字段应恰好是 {'、'.join(keys)}：多了 {extra}，缺了 {absent}")
    for key in ("template", "line_ends", "example"):
        if not isinstance(task[key], str):
            raise bad(f"{key} 应是字符串，收到 {type(task[key]).__name__}")
        why = _plain(task[key], allow_newline=key == "template")
        if why:
            raise bad(f"{key} {why}")
    for key, low, high in (("heads", 1, 9), ("tokens", 1, int(config["max_len"])), ("line_chars", 1, 9)):
        value = task[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise bad(f"{key} 应是 {low} 到 {high} 之间的整数，收到 {value!r}")
    template, ends, example = task["template"], task["line_ends"], task["example"]
    if template.count(PLACEHOLDER) != 1:
        raise bad(f"template 里应恰好有一个 {PLACEHOLDER}（藏头填在那里），收到 {template!r}")
    if "{" in template.replace(PLACEHOLDER, "") or "}" in template.replace(PLACEHOLDER, ""):
        raise bad(f"template 里除了 {PLACEHOLDER} 不能再有花括号：{template!r}")
    known = set(chars)
    if any(c not in known or c == "\n" for c in ends) or len(set(ends)) != len(ends):
        raise bad(f"line_ends 应是词表里互不相同的标点，收到 {ends!r}")
    if len(example) != task["heads"]:
        raise bad(f"example 应是 {task['heads']} 个字，收到 {example!r}")
    if any(c not in known or c in ends or c == "\n" for c in example):
        raise bad(f"example 的每个字都应在词表里、不是标点，收到 {example!r}")
    prompt_tokens = sum(1 if c in known else len(c.encode("utf-8")) for c in template.replace(PLACEHOLDER, example))
    if prompt_tokens + task["tokens"] - 1 > int(config["max_len"]):
        raise bad(f"提示 {prompt_tokens} 个词元再写 {task['tokens']} 个，超过了上下文 max_len = {config['max_len']}")
    return {key: task[key] for key in keys}


def read_tensors(header: dict[str, Any], weights: bytes) -> dict[str, Any]:
    """The weights file read back by its header: ``{name: float32 numpy array}`` (what PyTorch loads).

    Independent of the browser's reader (``playground.js``): tests and the benchmark compare the two."""
    import numpy as np

    if header.get("dtype") == "int8":
        return _read_int8(header, weights)
    values = np.frombuffer(weights, dtype="<f2").astype(np.float32)
    if values.size != int(header["params"]):
        raise ExportError(f"权重文件有 {values.size} 个数，说明文件写的是 {header['params']} 个")
    out = {}
    for spec in header["tensors"]:
        size = int(np.prod(spec["shape"]))
        out[spec["name"]] = values[spec["offset"]: spec["offset"] + size].reshape(spec["shape"]).copy()
    return out


def _read_int8(header: dict[str, Any], weights: bytes) -> dict[str, Any]:
    """An int8 file: each matrix's codes times its row's float32 scale (a float32 product, as the browser's
    Float32Array stores it), each vector from float16."""
    import numpy as np

    out, end = {}, 0
    for spec in header["tensors"]:
        shape, at = spec["shape"], int(spec["offset"])
        size = int(np.prod(shape))
        if spec["dtype"] == "int8":
            rows = shape[0]
            scales = np.frombuffer(weights, dtype="<f4", count=rows, offset=int(spec["scales"]))
            codes = np.frombuffer(weights, dtype=np.int8, count=size, offset=at).reshape(shape)
            out[spec["name"]] = codes.astype(np.float32) * scales[:, None].astype(np.float32)
            end = max(end, at + size)
        else:
            out[spec["name"]] = np.frombuffer(weights, dtype="<f2", count=size, offset=at).astype(np.float32) \
                .reshape(shape)
            end = max(end, at + 2 * size)
    if end != len(weights) or sum(v.size for v in out.values()) != int(header["params"]):
        raise ExportError(f"权重文件有 {len(weights)} 字节，说明文件的张量写到第 {end} 字节、"
                          f"共 {header['params']} 个数：两者对不上")
    return out


def header_bytes(header: dict[str, Any]) -> bytes:
    return (json.dumps(header, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
            + "\n").encode("utf-8")


def export(item: Planned, artifact_file: Path, cache_dir: Path | None = None) -> Path:
    """Read the trained file, write header and weights into a staging folder, commit it (atomic)."""
    import torch

    root = cache_dir or CACHE_DIR
    staging = build_cache.staging_dir(root, item.name)
    try:
        saved = torch.load(artifact_file, weights_only=True)
        header, weights = encode(item.name, saved, weights_dtype(item.artifact))
        (staging / WEIGHTS).write_bytes(weights)
        (staging / HEADER).write_bytes(header_bytes(header))
        (staging / "inputs.json").write_text(json.dumps(item.key.inputs, indent=1, sort_keys=True), encoding="utf-8")
        return build_cache.commit_dir(staging, item.entry(cache_dir))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def run(items: list[Planned], out: TextIO | None = None, cache_dir: Path | None = None) -> int:
    """Export every stale item (training its artifact first if needed); a line each. Returns how many."""
    out = out or sys.stdout
    stale = [item for item in items if not item.cached]
    if not stale:
        return 0
    build_cache.clean_stale_staging(cache_dir or CACHE_DIR)
    try:
        files = artifacts.ensure([item.artifact for item in stale], out)
    except artifacts.ArtifactError as exc:
        raise ExportError(f"模型演示用到的构建产物计算失败：\n{exc}") from exc
    for item in stale:
        t0 = time.perf_counter()
        export(item, files[item.name], cache_dir)
        print(f"  [演示] {item.name:<24} {time.perf_counter() - t0:6.2f} s  (导出 {weights_dtype(item.artifact)} 权重)",
              file=out, flush=True)
    return len(stale)
