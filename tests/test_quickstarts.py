"""What a new user copies from the quickstarts works as written.

The Python block of each SDK quickstart is executed unchanged (tests/test_docs_blocks.py
runs every other block of the docs). Its SDK client reads its base URL and key from the
environment (`OPENAI_BASE_URL` / `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL` /
`ANTHROPIC_API_KEY`), which point it at a local fake server; the server plays a model
that reads three logs (two of them in parallel calls), asks for a file that does not
exist, and answers. The logs together are larger than the budget, so the loop only works
if the manager compacts.

The three quickstarts' code also passes `mypy --strict`, and every `pip install` in the
README and docs/ installs from the checkout, with extras that exist.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render import count_payload
from context_graph.tokens.counting import ProviderFormat, default_counter
from context_graph.validate.request import validate
from orchestrator import ContextManager

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BUDGET = 6_000
LOGS = ("build.log", "test.log", "deploy.log")
ANSWER = "The deploy failed: the migration 0042 timed out on the orders table."


def _code(page: Path) -> str:
    """The page's one Python block."""
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, f"{page.name} should have exactly one python block"
    return str(blocks[0])


def _log(name: str) -> str:
    """A log of about 2,600 tokens, every line distinct."""
    lines = [
        f"2024-05-0{1 + i % 9}T12:{i % 60:02d}:00 {name} step {i}: worker-{i % 7} "
        f"handled batch {i * 37} in {100 + i * 3} ms status=ok"
        for i in range(110)
    ]
    lines.insert(70, f"ERROR {name}: migration 0042 timed out on table orders after 300 s")
    return "\n".join(lines) + "\n"


@pytest.fixture(name="workspace")
def workspace_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with `logs/*.log`, made the current directory."""
    (tmp_path / "logs").mkdir()
    for name in LOGS:
        (tmp_path / "logs" / name).write_text(_log(name), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _read(path: str, call_id: str) -> dict[str, Any]:
    return {"name": "read_file", "arguments": {"path": path}, "id": call_id}


def _script(prefix: str) -> list[dict[str, Any]]:
    """The model's side: four tool-using steps, then the answer."""
    return [
        {"tool_uses": [_read("logs/build.log", f"{prefix}1")]},
        {
            "text": "Reading the other two logs.",
            "tool_uses": [
                _read("logs/test.log", f"{prefix}2"),
                _read("logs/deploy.log", f"{prefix}3"),
            ],
        },
        {"tool_uses": [_read("logs/migrate.log", f"{prefix}4")]},
        {"text": ANSWER},
    ]


def _sent(body: dict[str, Any]) -> dict[str, Any]:
    """The part of a request body the manager rendered (no model, tools, options)."""
    return {key: body[key] for key in ("system", "messages") if key in body}


def _counter(fmt: ProviderFormat) -> Any:
    """Reports a request's prompt tokens as the renderer counts them (factor 1)."""
    cache = NodeTokenCache(default_counter())
    return lambda body: count_payload(_sent(body), fmt, cache)


def _run(page: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__quickstart__"}
    exec(compile(_code(page), str(page), "exec"), namespace)
    return namespace


def _check_session(
    server: Any, namespace: dict[str, Any], fmt: ProviderFormat, workspace: Path
) -> None:
    """Every request valid and within budget; the record complete; compaction happened."""
    manager: ContextManager = namespace["manager"]
    assert server.left() == 0
    assert len(server.requests) == 4
    for index, body in enumerate(server.requests):
        assert body["model"] == namespace["MODEL"]
        assert body["tools"] == namespace["TOOLS"]
        assert validate(_sent(body), fmt) == [], f"request {index}"
        assert count_payload(_sent(body), fmt, manager.raw.token_cache) <= BUDGET
    stats = manager.stats()
    assert stats.raw_tokens > BUDGET
    assert stats.proposals_applied > 0
    results = [node.text for node in manager.raw if node.kind == "tool_result"]
    logs = [(workspace / "logs" / name).read_text(encoding="utf-8") for name in LOGS]
    assert results[:3] == logs  # the pristine record keeps every output whole
    assert results[3].startswith("error:")


QUICKSTARTS = (
    DOCS / "quickstart.md",
    DOCS / "quickstart-openai.md",
    DOCS / "quickstart-anthropic.md",
)


class TestOpenAIQuickstart:
    def test_runs_as_written(
        self,
        openai_server: Any,
        workspace: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """docs/quickstart-openai.md drives a tool loop through the real SDK to the answer."""
        monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        openai_server.count_prompt = _counter("openai")
        openai_server.script(*_script("call_"))
        namespace = _run(DOCS / "quickstart-openai.md")
        _check_session(openai_server, namespace, "openai", workspace)
        assert set(openai_server.paths) == {"/v1/chat/completions"}
        assert capsys.readouterr().out.splitlines()[0] == ANSWER


class TestAnthropicQuickstart:
    def test_runs_as_written(
        self,
        anthropic_server: Any,
        workspace: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """docs/quickstart-anthropic.md drives a tool loop through the real SDK to the answer."""
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        anthropic_server.count_prompt = _counter("anthropic")
        script = _script("toolu_")
        script[0]["thinking"] = "The build log first: it runs before the others."
        anthropic_server.script(*script)
        namespace = _run(DOCS / "quickstart-anthropic.md")
        _check_session(anthropic_server, namespace, "anthropic", workspace)
        assert set(anthropic_server.paths) == {"/v1/messages"}
        assert all(isinstance(body.get("max_tokens"), int) for body in anthropic_server.requests)
        # The signed thinking block went back unchanged with the turn that made the call.
        turn = anthropic_server.requests[1]["messages"][1]
        assert turn["role"] == "assistant"
        assert turn["content"][0] == {
            "type": "thinking",
            "thinking": script[0]["thinking"],
            "signature": f"sig-{len(script[0]['thinking'])}",
        }
        assert turn["content"][1] == {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "read_file",
            "input": {"path": "logs/build.log"},
        }
        assert capsys.readouterr().out.splitlines()[0] == ANSWER


@pytest.fixture(name="mypy_errors", scope="module")
def mypy_errors_fixture(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """mypy --strict, with the project's config, on each quickstart's code: its errors."""
    folder = tmp_path_factory.mktemp("quickstarts")
    files = {}
    for page in QUICKSTARTS:
        blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
        files[page.name] = folder / f"{page.stem.replace('-', '_')}.py"
        files[page.name].write_text("".join(blocks), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--config-file",
        str(ROOT / "pyproject.toml"),
    ]
    command += ["--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary"]
    # A process of its own: mypy raises the recursion limit and retunes the garbage
    # collector of the process it runs in. MYPYPATH: this checkout, not an installed copy.
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        [*command, *map(str, files.values())], capture_output=True, text=True, env=env, check=False
    )
    # Exit 1 with no error printed is mypy not running at all (not installed, say).
    assert done.returncode == 0 or (done.returncode == 1 and done.stdout), done.stderr
    errors = done.stdout.splitlines()
    return {
        name: "\n".join(line for line in errors if line.startswith(str(path)))
        for name, path in files.items()
    }


class TestTypes:
    @pytest.mark.parametrize("page", QUICKSTARTS, ids=lambda page: page.name)
    def test_mypy_strict_accepts(self, page: Path, mypy_errors: dict[str, str]) -> None:
        """The page's code (all its blocks, in order) type-checks under mypy --strict."""
        assert mypy_errors[page.name] == ""


class TestInstallCommands:
    def test_pip_installs_from_the_checkout(self) -> None:
        """Every `pip install` on a page installs this checkout (`.` or `.[extra]`)."""
        extras = set(
            tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        )
        pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
        wrong = []
        for page in pages:
            text = page.read_text(encoding="utf-8")
            for match in re.finditer(r"pip install ([^`\n&|;#]*)", text):
                for target in (a for a in shlex.split(match.group(1)) if not a.startswith("-")):
                    name, _, rest = target.partition("[")
                    if (
                        name != "."
                        or not set(rest.rstrip("]").split(",") if rest else []) <= extras
                    ):
                        wrong.append(f"{page.relative_to(ROOT)}: pip install {target}")
        assert wrong == []
