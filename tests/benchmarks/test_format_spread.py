"""`benchmarks.format_spread`: a format's name as a key only in its home and the registry
(issue 32)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.format_spread import main, spread


def test_no_format_key_outside_home_and_registry() -> None:
    """Every file that picks a format by its name is in the format's folder or the registry."""
    assert {item.name: item.keys for item in spread()} == {
        "openai": (),
        "anthropic": (),
        "gemini": (),
        "responses": (),
    }


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for package in ("context_graph", "processors", "orchestrator"):
        (root / package).mkdir(exist_ok=True)
    return root


def test_the_count_sees_a_stray_key(tmp_path: Path) -> None:
    """A key outside its home is reported; one in its home or the registry is not."""
    root = _tree(
        tmp_path,
        {
            "context_graph/stray.py": 'FORMAT = "gemini"\n',
            "context_graph/formats/gemini/render.py": 'NAME = "gemini"\n',
            "context_graph/formats/registry.py": 'NAMES = ("gemini", "responses")\n',
            "context_graph/prose.py": '"""OpenAI\'s two APIs; openai_responses is neither."""\n',
            "context_graph/vendor.py": (
                'Vendor = Literal["openai"]\nOPENAI: Final[Vendor] = "openai"\n'
            ),
        },
    )
    found = {item.name: item for item in spread(root)}
    assert found["gemini"].keys == ("context_graph/stray.py",)
    assert found["responses"].keys == ()
    assert found["openai"].keys == ()  # a vendor's name is no key, though it is a word
    assert found["openai"].words == ("context_graph/prose.py", "context_graph/vendor.py")
    assert found["responses"].words == ()
    assert main(["--root", str(root)]) == 1


def test_the_command_passes_on_this_checkout(capsys: object) -> None:
    """`python -m benchmarks.format_spread` exits 0 here and prints a line per format."""
    assert main([]) == 0
