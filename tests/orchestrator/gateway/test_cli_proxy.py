"""`context-graph proxy` as a user starts it: what it prints, a request through it, bad options."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.cli import main
from orchestrator.cli.proxy import _announce
from orchestrator.gateway import OUTCOME

ROOT = Path(__file__).resolve().parents[3]


def test_the_command_serves_and_says_what_to_set(tmp_path: Path) -> None:
    with ProviderServer("anthropic", factor=1.0) as upstream:
        command = [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "proxy",
            "--upstream-url",
            upstream.url,
            "--budget",
            "5000",
            "--store",
            str(tmp_path / "sessions"),
            "--port",
            "0",
        ]
        proxy = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert proxy.stdout is not None
            announced = [proxy.stdout.readline() for _ in range(3)]
            url = re.search(r"export ANTHROPIC_BASE_URL=(\S+)", announced[2])
            assert url is not None, announced
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 16,
                "messages": [{"role": "user", "content": "hi"}],
            }
            headers = {"x-context-graph-session": "cli-1"}
            answer = httpx.post(f"{url.group(1)}/v1/messages", json=body, headers=headers)
        finally:
            proxy.terminate()
            proxy.communicate(timeout=30)
    assert answer.status_code == 200 and answer.headers[OUTCOME] == "rendered"
    assert upstream.requests[-1]["messages"][0]["content"][0]["text"] == "hi"
    assert (tmp_path / "sessions" / "anthropic" / "cli-1" / "thread-0.db").exists()


def test_the_openai_upstream_serves_chat_completions_for_opencode(tmp_path: Path) -> None:
    with ProviderServer("openai", factor=1.0) as upstream:
        command = [
            *(sys.executable, "-m", "orchestrator.cli", "proxy", "--upstream", "openai"),
            *("--upstream-url", upstream.url, "--budget", "5000", "--port", "0"),
            *("--store", str(tmp_path / "sessions")),
        ]
        proxy = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert proxy.stdout is not None
            announced = [proxy.stdout.readline() for _ in range(10)]
            url = re.search(r'"baseURL": "(\S+)/v1"', announced[-1])
            assert url is not None, announced
            body = {"model": "gpt-5.5", "messages": [{"role": "user", "content": "hi"}]}
            headers = {"X-Session-Id": "ses_1"}
            answer = httpx.post(f"{url.group(1)}/v1/chat/completions", json=body, headers=headers)
        finally:
            proxy.terminate()
            proxy.communicate(timeout=30)
    assert answer.status_code == 200 and answer.headers[OUTCOME] == "rendered"
    assert upstream.requests[-1]["messages"] == [{"role": "user", "content": "hi"}]
    assert (tmp_path / "sessions" / "chat" / "ses_1" / "thread-0.db").exists()


def test_a_store_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("x")
    assert main(["proxy", "--budget", "5000", "--store", str(taken)]) == 2
    assert "not a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["proxy"], ["proxy", "--budget", "0"], ["proxy", "--budget", "5000", "--upstream", "nope"]],
)
def test_bad_options_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2


AGENT_PAGES = ROOT / "docs" / "agents"


@pytest.mark.parametrize(
    ("page", "upstream", "shown"),
    [
        ("claude-code.md", "anthropic", slice(1, None)),
        ("gemini-cli.md", "gemini", slice(1, None)),
        ("codex.md", "openai", slice(2, 8)),  # the Codex entry
        ("opencode.md", "openai", slice(9, 10)),  # the opencode provider's base URL
        ("qwen-code.md", "openai", slice(11, 12)),  # Qwen Code's OPENAI_BASE_URL
        ("cline.md", "openai", slice(13, None)),  # Cline's sign-in at the proxy
    ],
)
def test_each_agent_page_shows_what_the_proxy_prints(
    page: str, upstream: str, shown: slice, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/agents/: the variable or config each page says to set is what the proxy prints."""
    options = argparse.Namespace(upstream=upstream, budget=60000)
    _announce("http://127.0.0.1:8787", "https://provider.example", options, None)
    printed = [line.strip() for line in capsys.readouterr().out.splitlines()[shown]]
    text = (AGENT_PAGES / page).read_text(encoding="utf-8")
    assert printed
    for line in printed:
        assert line.strip("{}") in text, f"{page} does not show {line!r}"
