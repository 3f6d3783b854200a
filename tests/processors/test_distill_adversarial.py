from __future__ import annotations

import json
import random
import time

import pytest

from context_graph import ContextGraph
from context_graph.entities import critical_entities, missing_entities
from context_graph.graph.nodes import node_adapter
from context_graph.testing import WordCounter
from processors import ProcessorContext, Replace
from processors.distill import LEVELS, Distiller, distill_text


def _graph_with(text: str, *, path: str | None = None) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {}}])
    if path is None:
        graph.add_tool_result("c", text)
    else:
        graph.add_file_read(path, text, call_id="c")
    return graph


async def _propose(
    text: str, level: str, *, path: str | None = None
) -> tuple[str | None, int, int]:
    """The replacement text (None when nothing is proposed) and the tokens before / after."""
    graph = _graph_with(text, path=path)
    node = next(n for n in graph if n.kind in {"tool_result", "file"})
    ctx = ProcessorContext.for_graph(graph)
    proposal = await Distiller(level=level, min_tokens=0).propose([node], ctx)  # type: ignore[arg-type]
    if proposal.empty:
        return None, ctx.count(node), ctx.count(node)
    (edit,) = proposal.edits
    assert isinstance(edit, Replace)
    node_adapter.validate_json(node_adapter.dump_json(edit.replacement))  # round-trips
    return edit.replacement.text, proposal.tokens_before, proposal.tokens_after


class TestEmpty:
    @pytest.mark.parametrize("text", ["", " ", "\n\n\n", "\t \r\n"])
    @pytest.mark.parametrize("level", LEVELS)
    async def test_blank_results_are_left_alone(self, text: str, level: str) -> None:
        """Empty or blank results get no edit."""
        assert (await _propose(text, level))[0] is None

    def test_blank_text_distills_to_a_header(self) -> None:
        """`distill_text` on nothing returns just its header."""
        out = distill_text("", "heavy", count=WordCounter().count)
        header = out.text.split("\n")[0]
        assert out.text == header + "\n"
        assert header == f"[distilled text, heavy: 0 -> {WordCounter().count(out.text)} tokens]"
        assert out.content_type == "text"


def _huge_log(size: int) -> tuple[str, list[str]]:
    rng = random.Random(7)
    lines: list[str] = []
    errors: list[str] = []
    i = total = 0
    while total < size:
        if i % 997 == 500:
            stamp = f"2024-05-20T11:{i // 60 % 60:02d}:{i % 60:02d}Z"
            line = f"{stamp} ERROR job {i} failed: TimeoutError after {rng.randint(30, 99)}s"
            errors.append(line)
        else:
            stamp = f"2024-05-20T11:{i // 60 % 60:02d}:{i % 60:02d}Z"
            line = f"{stamp} INFO worker-{i % 8} finished job {i} in {rng.randint(1, 900)} ms"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines), errors


class TestHuge:
    async def test_five_megabyte_log(self) -> None:
        """A 5 MB log is distilled in seconds, far below its size, every error line kept."""
        text, errors = _huge_log(5 * 1024 * 1024)
        assert len(text) >= 5 * 1024 * 1024
        start = time.perf_counter()
        out, before, after = await _propose(text, "heavy")
        elapsed = time.perf_counter() - start
        assert out is not None
        assert out.startswith("[distilled log, heavy: ")
        assert after <= 0.15 * before
        assert all(line in out for line in errors)
        assert elapsed < 60


class TestHostileText:
    @pytest.mark.parametrize("level", LEVELS)
    async def test_binary_looking_text(self, level: str) -> None:
        """Bytes read as text (NULs, control characters, high code points) never break it."""
        rng = random.Random(3)
        blob = bytes(rng.randrange(256) for _ in range(40_000)).decode("latin-1")
        out, before, after = await _propose(blob, level)
        assert after <= before
        if out is not None:
            assert out.split("\n", 1)[0].startswith("[distilled text, ")

    @pytest.mark.parametrize("level", LEVELS)
    async def test_mixed_scripts_and_emoji(self, level: str) -> None:
        """Multi-byte text comes out whole: every kept line is a line of the original."""
        lines = [
            f"{i:04d} 日本語のログ行 — Ünïcödé ✓ 🚀 файл /srv/данные/{i}.txt статус: ok 👍🏽"
            for i in range(400)
        ]
        text = "\n".join(lines)
        out, before, after = await _propose(text, level)
        assert after <= before
        if out is not None:
            body = out.split("\n")[1:]
            assert all(line in lines or line.startswith("[") for line in body)
            out.encode("utf-8")  # no lone surrogates, no split characters

    async def test_python_that_does_not_parse(self) -> None:
        """A `.py` file with syntax errors is outlined instead of parsed."""
        source = "\n".join(
            f"def broken_{i}(x:\n    return x +\nclass Thing{i}(Base:\n    value = {i}"
            for i in range(60)
        )
        out, _, _ = await _propose(source, "heavy", path="pkg/broken.py")
        assert out is not None
        assert out.startswith("[distilled python source, heavy: ")
        assert "def broken_0(x:" in out

    @pytest.mark.parametrize("depth", [50, 5_000])
    async def test_deeply_nested_json(self, depth: int) -> None:
        """Deep JSON is summarized; JSON too deep to parse is treated as text, no crash."""
        text = '{"a":' * depth + '"leaf"' + "}" * depth
        out = distill_text(text, "heavy", count=WordCounter().count)
        if depth < 500:
            assert out.content_type == "json"
            json.loads(out.text.split("\n", 1)[1])
        else:
            assert out.content_type == "text"
        assert len(out.text) <= len(text) + 60

    async def test_content_that_looks_like_two_types(self) -> None:
        """pytest output with a traceback keeps the counts and the exception."""
        text = "\n".join(
            [
                "collected 120 items",
                *[
                    f"tests/test_m{i}.py ........................................ [ {i}%]"
                    for i in range(40)
                ],
                "Traceback (most recent call last):",
                '  File "/repo/src/app.py", line 3, in <module>',
                "    main()",
                "RuntimeError: boom",
                "FAILED tests/test_m3.py::test_boom - RuntimeError: boom",
                "==== 1 failed, 119 passed in 2.00s ====",
            ]
        )
        out, _, _ = await _propose(text, "heavy")
        assert out is not None
        assert out.startswith("[distilled test output, heavy: ")
        assert "[pytest: 1 failed, 119 passed]" in out
        assert "RuntimeError: boom" in out


class TestLightIsLossless:
    def test_light_on_a_noisy_log_keeps_every_entity(self) -> None:
        """Light keeps every critical entity of a log with colours, repeats and blank runs."""
        text, _ = _huge_log(20_000)
        noisy = text.replace(" INFO ", " \x1b[32mINFO\x1b[0m ").replace("\n", "\n\n\n", 50)
        out = distill_text(noisy + "\n" + "\n".join(["same line"] * 30), "light").text
        assert missing_entities(critical_entities(text), out) == []
        assert "same line (x30)" in out
