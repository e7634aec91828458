"""Build (or reuse) a tiny Qwen3 target and a smaller draft that has learned to agree with it.

The embedded default serves real models through the real vLLM CPU engine, with no model hub.
Random weights would make acceptance meaningless, so the pair is trained here, offline, in a few
minutes on 2 cores: a byte-level BPE tokenizer (Python's standard library plus the generated
corpus), a target trained on the template-like corpus of `local_engine.tiny_corpus`, and a draft
distilled from the target's logits and from its own greedy outputs (the path vLLM verifies).

The result is cached under `.cache/tiny-models/<key>/`, where the key hashes this module's and the
corpus module's source, the build parameters and the library versions: a second run with nothing
changed reuses it, any change rebuilds it. Builds go to a temporary directory that is renamed
only when complete, and a file lock keeps two concurrent callers from building twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import math
import random
import shutil
import sysconfig
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.write import write_file

from trnspec_tools.local_engine import tiny_corpus

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "tiny-models"
BUILD_INFO = "build.json"


@dataclass(frozen=True)
class Shape:
    """A Qwen3 shape; the head counts keep grouped-query attention like the real models."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int


@dataclass(frozen=True)
class BuildSpec:
    """Every knob of the build: all of it goes into the cache key."""

    seed: int = 1234
    vocab_size: int = 4096
    stdlib_bytes: int = 1_500_000
    """How much standard-library source the tokenizer sees (first files in sorted order)."""
    corpus_documents: int = 4000
    seq_len: int = 128
    batch_size: int = 8
    bf16_autocast: bool = field(default_factory=lambda: cpu_has_fast_bf16(read_cpu_flags()))
    """Train under bfloat16 autocast; weights stay float32. On by default only where the CPU has
    bf16 instructions (AVX-512 BF16 or AMX: about twice as fast); elsewhere bf16 is emulated and
    slower than float32 (about 21x on an AVX2-only CPU, 5x on AVX-512 without BF16), so it is off
    there. Part of the cache key, so each choice gives its own reproducible pair."""
    max_position_embeddings: int = 4096
    target: Shape = field(default_factory=lambda: Shape(256, 4, 4, 2, 64, 768))
    draft: Shape = field(default_factory=lambda: Shape(128, 1, 2, 1, 64, 384))
    target_steps: int = 150
    """Half of the 300 steps of the pair measured until 2026-12-08 (docs/performance.md's sweeps):
    the same simulated acceptance at k=4 (0.942 against 0.943), the build 97 s instead of 188 s
    on an idle 2-core AVX2 host (target loss 0.72 against 0.21: it templates more, which the
    draft follows as well)."""
    target_lr: float = 3e-3
    draft_steps: int = 120
    draft_lr: float = 4e-3
    distill_prompts: int = 48
    """Prompts the target continues greedily; the draft is trained on those continuations too."""
    distill_new_tokens: int = 160
    eval_prompts: int = 12
    eval_new_tokens: int = 128
    k: int = 4
    threads: int = 2


@dataclass(frozen=True)
class TinyModels:
    """Paths of a finished pair, and the cache key they were built under."""

    target: Path
    draft: Path
    key: str

    @property
    def info(self) -> dict[str, Any]:
        """What the build measured (timings, simulated greedy acceptance), from build.json."""
        return json.loads((self.target.parent / BUILD_INFO).read_text())


Log = Callable[[str], None]

#: CPU feature flags (Linux /proc/cpuinfo names) of native bfloat16 arithmetic: AVX-512 BF16 and
#: AMX BF16. PyTorch's capability string is not enough: it says "AVX512" on CPUs without BF16,
#: where bf16 matmul measured 5x slower than float32 (18.3 ms vs 3.7 ms, 512x1024 @ 1024x1024).
FAST_BF16_CAPABILITIES = frozenset({"avx512_bf16", "amx_bf16"})

CPUINFO = Path("/proc/cpuinfo")


def cpu_has_fast_bf16(flags: Collection[str]) -> bool:
    """True when the CPU's feature flags include a native bfloat16 instruction set."""
    return not FAST_BF16_CAPABILITIES.isdisjoint(flags)


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The feature flags of the first processor in /proc/cpuinfo text (its x86 `flags` line);
    empty when the text has none."""
    for line in cpuinfo.split("\n"):  # the kernel's lines end at "\n" only
        name, sep, value = line.partition(":")
        if sep and name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def read_cpu_flags(path: Path = CPUINFO) -> frozenset[str]:
    """This machine's CPU flags; empty where there is no /proc/cpuinfo (macOS, Windows), so
    bf16 autocast stays off there."""
    try:
        return cpu_flags(path.read_text(errors="replace"))
    except OSError:
        return frozenset()


def cache_key(spec: BuildSpec) -> str:
    """Hash of everything that determines the models: sources, parameters, library versions."""
    import tokenizers
    import torch
    import transformers

    digest = hashlib.sha256()
    for module in (tiny_corpus, inspect.getmodule(cache_key)):
        digest.update(inspect.getsource(module).encode())
    digest.update(json_io.strict(asdict(spec), sort_keys=True).encode())
    versions = (torch.__version__, transformers.__version__, tokenizers.__version__)
    digest.update(repr(versions).encode())
    return digest.hexdigest()[:16]


def ensure_tiny_models(
    cache_dir: Path | None = None, spec: BuildSpec | None = None, log: Log | None = None
) -> TinyModels:
    """Return the cached pair for `spec`, building it first if it is not there yet."""
    spec = spec or BuildSpec()
    cache_dir = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    key = cache_key(spec)
    final = cache_dir / key
    models = TinyModels(target=final / "target", draft=final / "draft", key=key)
    if (final / BUILD_INFO).is_file():
        return models
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _lock(cache_dir / f"{key}.lock"):
        if (final / BUILD_INFO).is_file():  # another process finished it while we waited
            return models
        work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache_dir))
        try:
            build(work, spec, log or (lambda _msg: None))
            if final.exists():  # a stale, incomplete directory from an interrupted rename
                shutil.rmtree(final)
            work.rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return models


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(out_dir: Path, spec: BuildSpec, log: Log) -> dict[str, Any]:
    """Make the tokenizer and both models in `out_dir` (target/, draft/, build.json)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(spec.threads)
    try:
        return _build(out_dir, spec, log)
    finally:
        torch.set_num_threads(threads)


def _build(out_dir: Path, spec: BuildSpec, log: Log) -> dict[str, Any]:
    import torch

    _seed_everything(spec.seed)
    timings: dict[str, float] = {}

    with _timed(timings, "total_s"):
        with _timed(timings, "tokenizer_s"):
            documents = tiny_corpus.corpus(spec.seed, spec.corpus_documents)
            tokenizer = train_tokenizer(documents, spec)
        log(f"tokenizer: {len(tokenizer)} tokens in {timings['tokenizer_s']:.1f} s")

        stream = _token_stream(tokenizer, documents)
        target = _new_model(spec.target, tokenizer, spec)
        with _timed(timings, "target_s"):
            target_loss = _train(
                target,
                spec.target_steps,
                spec.target_lr,
                lambda rng: _cross_entropy(target, _batch(stream, spec, rng)),
                spec.seed + 1,
                log,
                "target",
                spec.bf16_autocast,
            )
        target.eval()

        with _timed(timings, "target_greedy_s"):
            prompts = _prompt_ids(tokenizer, spec.distill_prompts, spec.seed + 2)
            greedy = _greedy(target, prompts, spec.distill_new_tokens)
        log(f"target greedy continuations: {len(greedy)} in {timings['target_greedy_s']:.1f} s")

        draft = _new_model(spec.draft, tokenizer, spec)
        with _timed(timings, "draft_s"):
            draft_loss = _train(
                draft,
                spec.draft_steps,
                spec.draft_lr,
                lambda rng: _distill_loss(draft, target, stream, greedy, spec, rng),
                spec.seed + 3,
                log,
                "draft",
                spec.bf16_autocast,
            )
        draft.eval()

        with _timed(timings, "eval_s"):
            evaluation = evaluate_pair(target, draft, tokenizer, spec)
    log(
        f"greedy agreement {evaluation['token_agreement']:.3f}, simulated acceptance at "
        f"k={spec.k}: {evaluation['acceptance_rate']:.3f} ({timings['total_s']:.0f} s in all)"
    )

    for name, model in (("target", target), ("draft", draft)):
        _save(model, tokenizer, out_dir / name)
    info = {
        "spec": asdict(spec),
        "vocab_size": len(tokenizer),
        "params": {"target": _params(target), "draft": _params(draft)},
        "final_loss": {"target": target_loss, "draft": draft_loss},
        "timings": timings,
        "evaluation": evaluation,
        "torch_threads": torch.get_num_threads(),
    }
    write_file(out_dir / BUILD_INFO, json_io.dumps(info))
    return info


@contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    """Records the block's wall time, seconds, as `timings[key]`."""
    mark = time.perf_counter()
    yield
    timings[key] = time.perf_counter() - mark


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def stdlib_text(limit: int) -> Iterator[str]:
    """Standard-library sources in sorted order, up to about `limit` characters: real code, so
    the tokenizer is a plausible Python tokenizer and not only fitted to the templates."""
    root = Path(sysconfig.get_paths()["stdlib"])
    seen = 0
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield text
        seen += len(text)
        if seen >= limit:
            return


def train_tokenizer(documents: list[str], spec: BuildSpec) -> Any:
    """A byte-level BPE (any text round-trips) wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=list(tiny_corpus.SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = [*stdlib_text(spec.stdlib_bytes), *documents[: spec.corpus_documents // 4]]
    bpe.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token=tiny_corpus.IM_END,
        pad_token=tiny_corpus.END_OF_TEXT,
        chat_template=tiny_corpus.CHAT_TEMPLATE,
        model_max_length=spec.max_position_embeddings,
        clean_up_tokenization_spaces=False,
    )


def _token_stream(tokenizer: Any, documents: list[str]) -> list[int]:
    """All documents, each ended by <|endoftext|>, as one stream cut into training windows."""
    eot = tokenizer.convert_tokens_to_ids(tiny_corpus.END_OF_TEXT)
    stream: list[int] = []
    for ids in tokenizer(documents, add_special_tokens=False)["input_ids"]:
        stream.extend(ids)
        stream.append(eot)
    return stream


def _new_model(shape: Shape, tokenizer: Any, spec: BuildSpec) -> Any:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    eot = tokenizer.convert_tokens_to_ids(tiny_corpus.END_OF_TEXT)
    im_end = tokenizer.convert_tokens_to_ids(tiny_corpus.IM_END)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=eot,
        eos_token_id=im_end,
        pad_token_id=eot,
        architectures=["Qwen3ForCausalLM"],
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = [im_end, eot]
    model.generation_config.bos_token_id = eot
    model.generation_config.pad_token_id = eot
    model.generation_config.do_sample = False
    return model


def _params(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def _batch(stream: list[int], spec: BuildSpec, rng: random.Random) -> Any:
    import torch

    starts = [rng.randrange(0, len(stream) - spec.seq_len) for _ in range(spec.batch_size)]
    return torch.tensor([stream[s : s + spec.seq_len] for s in starts])


def _cross_entropy(model: Any, ids: Any) -> Any:
    import torch.nn.functional as F

    logits = model(input_ids=ids).logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def _distill_loss(
    draft: Any,
    target: Any,
    stream: list[int],
    greedy: list[list[int]],
    spec: BuildSpec,
    rng: random.Random,
) -> Any:
    """KL to the target's distribution on corpus windows, plus cross-entropy on the target's own
    greedy continuations: the second term teaches the draft exactly the path vLLM will verify."""
    import torch
    import torch.nn.functional as F

    ids = _batch(stream, spec, rng)
    with torch.no_grad():
        teacher = F.log_softmax(target(input_ids=ids).logits[:, :-1], dim=-1)
    student = F.log_softmax(draft(input_ids=ids).logits[:, :-1], dim=-1)
    kl = F.kl_div(student, teacher, log_target=True, reduction="none").sum(-1).mean()

    picks = [greedy[rng.randrange(len(greedy))] for _ in range(max(1, spec.batch_size // 4))]
    width = min(len(p) for p in picks)
    seqs = torch.tensor([p[:width] for p in picks])
    return kl + _cross_entropy(draft, seqs)


def _train(
    model: Any,
    steps: int,
    lr: float,
    loss_fn: Callable[[random.Random], Any],
    seed: int,
    log: Log,
    name: str,
    bf16: bool,
) -> float:
    """AdamW with a short warm-up and a cosine decay: enough to fit the templates in minutes."""
    import torch

    model.train()
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    warmup = max(1, steps // 20)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    loss_value = float("nan")
    for step in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(rng)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        loss_value = float(loss.detach())
        if step % 50 == 0 or step == steps - 1:
            log(f"{name} step {step + 1}/{steps}: loss {loss_value:.3f}")
    return loss_value


def _prompt_ids(tokenizer: Any, count: int, seed: int) -> list[list[int]]:
    """Completion and chat prompts, tokenized the way the server will tokenize them."""
    half = count // 2
    prompts = tiny_corpus.completion_prompts(count - half, seed)
    ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    for message in tiny_corpus.chat_prompts(half, seed):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        ids.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    return ids


def _greedy(model: Any, prompts: list[list[int]], new_tokens: int) -> list[list[int]]:
    """Greedy continuations (prompt included) that ignore end-of-sequence, as the demo's
    throughput requests do; batched with left padding, which is what keeps this cheap."""
    import torch

    pad = model.generation_config.pad_token_id
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=pad,
        )
    return [p + row[width:] for p, row in zip(prompts, out.tolist(), strict=True)]


def evaluate_pair(target: Any, draft: Any, tokenizer: Any, spec: BuildSpec) -> dict[str, Any]:
    """Simulate greedy speculative decoding at k on held-out prompts.

    Under greedy decoding the draft's proposals are accepted exactly while they match the target's
    greedy tokens, so teacher-forcing the draft along the target's greedy path gives the same
    accept/reject pattern vLLM will see (up to float rounding), at a fraction of the cost.
    """
    import torch

    prompts = _prompt_ids(tokenizer, spec.eval_prompts, spec.seed + 100)
    matches_total = positions = drafted = accepted = steps = 0
    for prompt, seq in zip(prompts, _greedy(target, prompts, spec.eval_new_tokens), strict=True):
        with torch.no_grad():
            guess = draft(input_ids=torch.tensor([seq])).logits[0, :-1].argmax(-1).tolist()
        hits = [guess[i - 1] == seq[i] for i in range(len(prompt), len(seq))]
        matches_total += sum(hits)
        positions += len(hits)
        i = 0
        while i < len(hits):
            run = 0
            while run < spec.k and i + run < len(hits) and hits[i + run]:
                run += 1
            drafted += spec.k
            accepted += run
            steps += 1
            i += run + 1
    return {
        "token_agreement": matches_total / positions,
        "acceptance_rate": accepted / drafted,
        "mean_accepted_length": 1 + accepted / steps,
        "k": spec.k,
        "prompts": len(prompts),
    }


def _save(model: Any, tokenizer: Any, path: Path) -> None:
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # one tiny shard: a progress bar is only noise in the log
    try:
        model.save_pretrained(path, safe_serialization=True)
        tokenizer.save_pretrained(path)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
