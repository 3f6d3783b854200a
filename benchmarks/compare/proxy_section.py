"""The benchmarks page's section on the gateway (`python -m benchmarks.proxy`)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.compare.legacy import _command

__all__ = ["proxy_page_section", "proxy_section"]

_ABOUT = (
    "The gateway (`context-graph proxy --memory`, in a process of its own, as it is "
    "deployed) in front of the strict fake upstream (`benchmarks.provider_server`, in a "
    "process of its own, which validates and counts every body it gets and, as the "
    "providers' APIs do, keeps each connection open from request to request: the client "
    "and the gateway reuse theirs; it counts every body on one thread of its own, since "
    "the tokenizer counts about a quarter slower on a thread other than the first to "
    "count, and keeps no body, so that no long garbage collection falls inside a timed "
    "request). The same httpx "
    "client sends the same encoded body to the upstream directly and through the gateway, "
    "the two alternated in one run (which goes first swaps every pair), at histories of "
    "about 10k, 100k and 300k tokens, on the Anthropic Messages and the OpenAI Responses "
    "wire. The gateway's budget is above the history, so nothing is compacted: what the "
    "overhead holds is reading the request, taking in what is new, rendering and "
    "forwarding. The upstream says how long it took to answer (a `Server-Timing` "
    "header, which the gateway passes back), and each side of a pair is taken less that "
    "time: the fake's validating and counting varies by tens of ms from one request to the "
    "next, and is not the gateway's. *Steady state*: the session already holds the "
    "history and each request "
    "adds one short turn (a tool call and a one-line output), 100 pairs per size; *first "
    "of a session*: a new session each time, whose whole history the gateway takes in, 10 "
    "pairs per size (so its p99 is close to its largest). The machine is 2 cores shared "
    "with other jobs (the run's load average is said below the tables): the p99 columns "
    "move from run to run.\n\n"
    "Then the scripted task the gateway tests drive (`benchmarks.gateway_script`: the "
    "Anthropic SDK in a tool loop, a ~1,200-token tool output per turn) runs with no proxy "
    "and through the gateway at two budgets. *Tokens billed* are the prompt tokens the "
    "upstream counted, summed; *reused prefix* is the share of them that the previous "
    "request also sent as its leading part (the system prompt and tools unchanged, then "
    "the first messages equal once Anthropic's `cache_control` marks are set aside): what "
    "a provider's prefix cache can serve (the fake does not model Anthropic's cache, so "
    "the benchmark measures the prefixes itself). A *compaction* is a render after which "
    "the session's manager has applied proposals; *reuse between compactions* is, over "
    "the requests that follow one without a compaction, the share of the previous "
    "request's tokens sent again as the prefix."
)


def proxy_page_section(tables: str) -> str:
    """The section around `python -m benchmarks.proxy`'s output."""
    return "\n".join(
        [
            "## The gateway: overhead per request, and a scripted task through it",
            "",
            "```bash",
            "python -m benchmarks.proxy            # this section (about 5 minutes)",
            "python -m benchmarks.proxy --quick    # seconds: 10k only, a short task",
            "python -m benchmarks.proxy --profile  # cProfile of the gateway's handling at 300k",
            "```",
            "",
            _ABOUT,
            "",
            tables,
        ]
    )


def proxy_section(
    progress: Callable[[str], None], run: Callable[[str, list[str]], str] = _command
) -> str:
    """Run the proxy benchmark in a fresh interpreter; its section of the page."""
    progress("proxy benchmark (the gateway's overhead, a scripted task)")
    return proxy_page_section(run("benchmarks.proxy", []))
