"""The loops of docs/integrations/clients.md run as written, 30 turns, every request valid.

Each section's Python block runs unchanged, its SDK client pointed (by the environment)
at a `ProviderServer` of its wire format: the model reads 29 logs of about 1,500 tokens
each, one per turn, then answers. The server refuses any body our validator or the SDK's
request types reject, and any prompt over the budget by its own count (ours times
1.25), so a run of 30 accepted requests is the page's promise kept.
"""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "integrations" / "clients.md"
BUDGET = 8_000
TURNS = 30
ANSWER = "The deploy failed: migration 0042 timed out."


def sections() -> dict[str, str]:
    """The page's Python blocks, by the title of their section."""
    text = PAGE.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title = part.splitlines()[0].strip()
        blocks = re.findall(r"```python\n(.*?)```", part, re.S)
        if blocks:
            found[title] = blocks[0]
    return found


def respond_with_reads() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The model: one `read_file` per turn (a reasoning item first), then the answer."""
    turn = {"n": 0}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        turn["n"] += 1
        if turn["n"] < TURNS:
            call = ["read_file", {"path": f"logs/f{turn['n']}.log"}]
            return {"calls": [call], "reasoning": True}
        return {"text": ANSWER}

    return respond


@pytest.fixture(name="workspace")
def workspace_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current directory with `logs/f1.log` ... `logs/f29.log`, every line distinct."""
    (tmp_path / "logs").mkdir()
    for n in range(1, TURNS):
        lines = [f"f{n} step {i}: worker-{i % 7} batch {i * 37 + n} status=ok" for i in range(150)]
        (tmp_path / "logs" / f"f{n}.log").write_text("\n".join(lines), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(name="offline")
def offline_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every connection that leaves this machine."""
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if self.family != socket.AF_UNIX and host not in ("127.0.0.1", "::1", "localhost"):
            msg = f"the loops run offline: refused a connection to {address!r}"
            raise OSError(msg)
        real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


def point_at(wire: str, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the SDKs' default clients reach `url`."""
    for key in ("GOOGLE_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(key, raising=False)
    if wire in ("openai", "responses"):
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    elif wire == "anthropic":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    else:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")


def run_block(code: str) -> dict[str, Any]:
    """Run a page block in a fresh namespace, naming the page in tracebacks."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, str(PAGE), "exec"), namespace)
    return namespace


LOOPS = {
    "OpenAI Chat Completions": "openai",
    "OpenAI Responses": "responses",
    "Anthropic": "anthropic",
    "google-genai": "gemini",
    "Streaming": "openai",
}


# Loops that render and add each reply by hand, without a wrapped client.
BY_HAND = {"Without the wrap: the Responses API by hand": "responses"}


class TestPage:
    def test_every_loop_is_tested(self) -> None:
        """The page's runnable sections: four managed loops, LiteLLM's, and the by-hand ones."""
        assert set(sections()) == {*LOOPS, *BY_HAND, "LiteLLM"}

    @pytest.mark.parametrize("title", sorted(LOOPS))
    def test_managed_loop_adds_at_most_five_lines(self, title: str) -> None:
        """What context-graph adds to a managed loop is the import, the manager and the wrap."""
        marked = [line for line in sections()[title].splitlines() if "# context-graph" in line]
        assert len(marked) == 3
        assert any("manager.wrap(" in line for line in marked)

    def test_litellm_loop_adds_at_most_five_lines(self) -> None:
        """The LiteLLM loop's own lines about the manager are five."""
        code = sections()["LiteLLM"]
        lines = [line for line in code.splitlines() if "manager" in line.lower()]
        assert len(lines) <= 7  # two of them are the loop's own messages, now ingested
        assert sum("manager.add_" in line and "add_response" not in line for line in lines) == 3


class TestLoops:
    @pytest.mark.parametrize("title", sorted({**LOOPS, **BY_HAND}))
    def test_thirty_turns_all_valid_under_budget(
        self,
        title: str,
        workspace: Path,
        offline: None,
        provider_server: Any,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """30 requests reach the model, each valid and under the budget by its count."""
        wire = {**LOOPS, **BY_HAND}[title]
        server = provider_server(wire, respond=respond_with_reads(), limit=BUDGET)
        point_at(wire, server.url, monkeypatch)
        namespace = run_block(sections()[title])
        assert server.refused == []
        assert len(server.requests) == TURNS
        assert max(server.prompts) <= BUDGET
        assert capsys.readouterr().out.strip() == ANSWER
        stats = namespace["manager"].stats()
        assert stats.raw_tokens > 4 * BUDGET  # the logs could not all have been sent
        assert stats.proposals_applied > 0

    def test_the_same_loop_unmanaged_is_refused(
        self,
        workspace: Path,
        offline: None,
        provider_server: Any,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Without the wrap (the one changed line undone) the loop outgrows the window."""
        import openai

        server = provider_server("openai", respond=respond_with_reads(), limit=BUDGET)
        point_at("openai", server.url, monkeypatch)
        code = sections()["OpenAI Chat Completions"]
        bare = code.replace("manager.wrap(OpenAI())", "OpenAI()")
        assert bare != code
        with pytest.raises(openai.BadRequestError, match="over the 8000-token limit"):
            run_block(bare)
        assert 0 < len(server.requests) < TURNS


class TestLiteLLM:
    # LiteLLM leaves an event loop and sockets of its own unclosed at exit.
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    def test_litellm_loop(
        self,
        workspace: Path,
        offline: None,
        provider_server: Any,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """LiteLLM's loop: 30 requests, each valid and under the budget by the server's count."""
        monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        with warnings_allowed():
            pytest.importorskip("litellm", reason="litellm is not installed")
        server = provider_server("openai", respond=respond_with_reads(), limit=BUDGET)
        point_at("openai", server.url, monkeypatch)
        with warnings_allowed():
            namespace = run_block(sections()["LiteLLM"])
        assert server.refused == []
        assert len(server.requests) == TURNS
        assert max(server.prompts) <= BUDGET
        assert capsys.readouterr().out.strip().endswith(ANSWER)
        assert namespace["manager"].stats().raw_tokens > 4 * BUDGET


@contextlib.contextmanager
def warnings_allowed() -> Iterator[None]:
    """LiteLLM warns about its own dependencies on import; that is not the loop's failure."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
