"""Real architectures through every step a user takes (issue 41): import, compare, execute with
the model's own weights, ``wb.accelerate`` and ``torch.compile(backend="workbench")``.

    .venv/bin/python benchmarks/any_model.py                     # transformers tiny configs
    .venv/bin/python benchmarks/any_model.py --zoo               # tests/model_zoo_any.py
    .venv/bin/python benchmarks/any_model.py --models llama,bart --out any.csv

``transformers`` is optional (not a dependency of the workbench; ``pip install transformers``):
without it only ``--zoo`` runs.  Every model is built from a tiny config with random weights
(nothing downloaded, ``use_cache=False``), in eval mode, batch 2 and 8 tokens.  Columns, each
``ok`` or the stage's one-line error:

* ``ops``, ``default``: op count and ops imported with a default cost (``from_torch``);
* ``gemm_err``: the graph's GEMM FLOPs against ``FlopCounterMode`` (math SDPA, grad on);
* ``compare``: all 12 policies simulated on h100 with memory planned (rows without an arena);
* ``execute``: every schedule of the comparison run with the torch executor on new inputs,
  outputs against ``model(...)`` (max relative difference);
* ``accelerate``: ``wb.accelerate(model, kwargs=..., policy="nnc")`` called by keyword, on the
  example and on a new sequence length, against the model; ``train``: a copy in training mode
  falls back and its buffers are untouched;
* ``backend``: ``torch.compile(model, backend="workbench", options={"policy": "nnc"})`` over
  three lengths and two batch sizes, against the model, and how many calls ran a schedule.

A stage that raises is a row cell with its error; the next stages still run.  Prints the table;
``--out`` writes it as CSV.  Takes about 10-20 s per model on a 2-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import workbench as wb  # noqa: E402

VOCAB = 64


def _text_config(cls: Any, **extra: Any) -> Any:
    base = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, max_position_embeddings=64, use_cache=False)
    base.update(extra)
    return cls(**base)


def _transformers() -> dict[str, Callable[[], tuple[Any, Callable[[int, int], dict]]]]:
    """name -> () -> (model, inputs(batch, length) -> kwargs)."""
    import transformers as tf

    def ids(b: int, t: int) -> dict[str, Any]:
        g = torch.Generator().manual_seed(b * 100 + t)
        mask = torch.ones(b, t, dtype=torch.long)
        mask[1:, t - 2:] = 0
        return {"input_ids": torch.randint(0, VOCAB, (b, t), generator=g),
                "attention_mask": mask}

    def only_ids(b: int, t: int) -> dict[str, Any]:
        return {"input_ids": ids(b, t)["input_ids"]}

    def seq2seq(b: int, t: int) -> dict[str, Any]:
        return {**ids(b, t), "decoder_input_ids": ids(b, max(2, t - 2))["input_ids"]}

    def pixels(side: int) -> Callable[[int, int], dict]:
        return lambda b, t: {"pixel_values": torch.randn(b, 3, side, side,
                                                         generator=torch.Generator()
                                                         .manual_seed(t))}

    def audio(b: int, t: int) -> dict[str, Any]:
        return {"input_values": torch.randn(b, 400 + 40 * t,
                                            generator=torch.Generator().manual_seed(t))}

    def mels(b: int, t: int) -> dict[str, Any]:
        return {"input_features": torch.randn(b, 16, 2 * 24,
                                              generator=torch.Generator().manual_seed(t + b))}

    gqa = dict(num_key_value_heads=2)
    return {
        "bert": lambda: (tf.BertModel(_text_config(tf.BertConfig)), ids),
        "roberta": lambda: (tf.RobertaModel(_text_config(tf.RobertaConfig)), ids),
        "albert": lambda: (tf.AlbertModel(_text_config(tf.AlbertConfig, embedding_size=16)),
                           ids),
        "electra": lambda: (tf.ElectraModel(_text_config(tf.ElectraConfig,
                                                         embedding_size=16)), ids),
        "deberta_v2": lambda: (tf.DebertaV2Model(_text_config(tf.DebertaV2Config)), ids),
        "distilbert": lambda: (tf.DistilBertModel(tf.DistilBertConfig(
            vocab_size=VOCAB, dim=32, hidden_dim=64, n_layers=2, n_heads=4,
            max_position_embeddings=64)), ids),
        "gpt2": lambda: (tf.GPT2Model(tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2,
                                                    n_head=4, n_positions=64,
                                                    use_cache=False)), ids),
        "llama": lambda: (tf.LlamaForCausalLM(_text_config(tf.LlamaConfig, **gqa)), ids),
        "mistral": lambda: (tf.MistralModel(_text_config(tf.MistralConfig, **gqa)), ids),
        "qwen2": lambda: (tf.Qwen2Model(_text_config(tf.Qwen2Config, **gqa)), ids),
        "phi": lambda: (tf.PhiModel(_text_config(tf.PhiConfig)), ids),
        "gemma": lambda: (tf.GemmaModel(_text_config(tf.GemmaConfig, head_dim=8, **gqa)), ids),
        "t5_encoder": lambda: (tf.T5EncoderModel(tf.T5Config(
            vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
            use_cache=False)), only_ids),
        "bart": lambda: (tf.BartModel(tf.BartConfig(
            vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False)), seq2seq),
        "mamba": lambda: (tf.MambaModel(tf.MambaConfig(
            vocab_size=VOCAB, hidden_size=32, state_size=8, num_hidden_layers=2,
            use_cache=False)), only_ids),
        "whisper_encoder": lambda: (tf.WhisperModel(tf.WhisperConfig(
            vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=24, pad_token_id=1,
            bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
            use_cache=False)).get_encoder(), mels),
        "wav2vec2": lambda: (tf.Wav2Vec2Model(tf.Wav2Vec2Config(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
            conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)), audio),
        "clip_vision": lambda: (tf.CLIPVisionModel(tf.CLIPVisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            image_size=32, patch_size=8)), pixels(32)),
        "segformer": lambda: (tf.SegformerModel(tf.SegformerConfig(
            num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
            hidden_sizes=[16, 32], num_attention_heads=[1, 2], patch_sizes=[7, 3],
            strides=[4, 2], mlp_ratios=[2, 2], decoder_hidden_size=32)), pixels(64)),
    }


def _zoo() -> dict[str, Callable[[], tuple[Any, Callable[[int, int], dict]]]]:
    import inspect

    from tests.model_zoo_any import ANY

    def entry(name: str) -> Callable[[], tuple[Any, Callable[[int, int], dict]]]:
        e = ANY[name]

        def build() -> tuple[Any, Callable[[int, int], dict]]:
            model = e.build()
            names = list(inspect.signature(model.forward).parameters)

            def inputs(b: int, t: int) -> dict[str, Any]:
                args, kwargs = e.inputs(b, max(e.lengths[0], t // 2 + 2), 0)
                return {**dict(zip(names, args, strict=False)), **kwargs}

            return model, inputs
        return build

    return {name: entry(name) for name in ANY}


def _leaves(value: Any) -> list[Any]:
    import dataclasses

    from torch.utils._pytree import tree_leaves

    if hasattr(value, "to_tuple"):  # transformers' ModelOutput
        value = value.to_tuple()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = [getattr(value, f.name) for f in dataclasses.fields(value)]
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def _diff(got: Any, want: Any) -> float:
    a, b = _leaves(got), _leaves(want)
    if len(a) != len(b):
        raise AssertionError(f"{len(a)} outputs, the model gives {len(b)}")
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        scale = float(y.abs().max()) if y.numel() else 1.0
        worst = max(worst, float((x.float() - y.float()).abs().max()) / max(scale, 1e-12))
    return worst


def _cell(fn: Callable[[], str]) -> str:
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            return fn()
    except Exception as exc:  # noqa: BLE001 - a stage's failure is the row's cell
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:120]


def run_model(name: str, build: Callable[[], tuple[Any, Callable[[int, int], dict]]]
              ) -> dict[str, Any]:
    from tests._flops import flop_counter, graph_gemm_flops

    t0 = time.perf_counter()
    torch.manual_seed(0)
    row: dict[str, Any] = {"model": name}
    try:
        model, inputs = build()
    except Exception as exc:  # noqa: BLE001 - a library that cannot build it: the row says so
        row["import"] = f"cannot build: {type(exc).__name__}: {exc}"[:120]
        return row
    model.eval()
    example = inputs(2, 8)
    graph: list[Any] = []

    def imported() -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph.append(wb.io.from_torch(model, (), kwargs=example))
        g = graph[0]
        row["ops"] = len(g.ops)
        default = sorted({str(o.attrs.get("target", o.kind)) for o in g.ops
                          if o.attrs.get("cost") == "default"})
        row["default"] = ",".join(default) or "0"
        want = flop_counter(model, (), example)
        row["gemm_err"] = f"{100 * (graph_gemm_flops(g) / want - 1):+.1f}%" if want else "-"
        del caught
        return "ok"

    row["import"] = _cell(imported)
    comparison: list[Any] = []

    def compared() -> str:
        c = wb.compare(graph[0], device="h100", show_progress=False)
        comparison.append(c)
        missing = c.table[c.table["arena_mib"].isna()]["policy"].tolist()
        return "ok" if not missing else f"no arena: {','.join(missing)}"

    row["compare"] = _cell(compared) if graph else "-"

    def executed() -> str:
        new = inputs(2, 8)  # same shapes, other values
        with torch.no_grad():
            want = model(**new)
        flat = graph[0].program.graph_inputs((), new)  # the values by placeholder
        worst = 0.0
        for sched in comparison[0].schedules.values():
            trace = wb.execute(sched, executor="torch", device="cpu", repeats=1, warmup=0,
                               inputs=flat, return_outputs=True)
            worst = max(worst, _diff(trace.meta["outputs"], want))
        return f"ok ({worst:.0e})" if worst <= 1e-4 else f"differs {worst:.1e}"

    row["execute"] = _cell(executed) if comparison else "-"

    def accelerated() -> str:
        fast = wb.accelerate(model, kwargs=example, policy="nnc")
        worst = 0.0
        for length in (8, 12):
            call = inputs(2, length)
            with torch.no_grad():
                worst = max(worst, _diff(fast(**call), model(**call)))
        kind = type(fast).__name__
        return f"ok ({worst:.0e}, {kind})" if worst <= 1e-4 else f"differs {worst:.1e}"

    row["accelerate"] = _cell(accelerated)

    def training() -> str:
        twin = copy.deepcopy(model).train()
        before = [b.clone() for b in twin.buffers()]
        fast = wb.accelerate(twin, kwargs=example, policy="nnc")
        same = all(torch.equal(a, b) for a, b in zip(before, twin.buffers(), strict=True))
        return ("ok" if same else "buffers moved") + f" ({type(fast).__name__})"

    row["train"] = _cell(training)

    def compiled() -> str:
        torch._dynamo.reset()
        fn = torch.compile(model, backend="workbench", options={"policy": "nnc"})
        worst, calls = 0.0, 0
        for batch in (1, 2):
            for length in (6, 8, 11):
                call = inputs(batch, length)
                with torch.no_grad():
                    worst = max(worst, _diff(fn(**call), model(**call)))
                calls += 1
        return f"ok ({worst:.0e}, {calls} calls)" if worst <= 1e-4 else f"differs {worst:.1e}"

    row["backend"] = _cell(compiled)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zoo", action="store_true", help="tests/model_zoo_any.py's models")
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--out", help="also write the table as CSV")
    args = parser.parse_args(argv)
    import pandas as pd

    if args.zoo:
        table = _zoo()
    else:
        try:
            table = _transformers()
        except ImportError:
            print("transformers is not installed: pip install transformers, or use --zoo")
            return 2
    names = args.models.split(",") if args.models else list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown model {unknown[0]!r} (known: {', '.join(table)})")
        return 2
    torch._dynamo.config.allow_rnn = True  # dynamo runs nn.LSTM/GRU itself otherwise
    rows = []
    for name in names:
        rows.append(run_model(name, table[name]))
        print(f"{name}: {rows[-1]['seconds']} s", file=sys.stderr, flush=True)
    frame = pd.DataFrame(rows)
    with pd.option_context("display.max_colwidth", 60, "display.width", 250):
        print(frame.to_string(index=False))
    if args.out:
        frame.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
