from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, field_validator

from context_graph import ConfigurationError, ContextGraph
from context_graph.graph.content import ImagePart, TextPart, ThinkingPart
from context_graph.graph.nodes import UserNode
from processors import ProcessorContext, Proposal, Replace, available_processors, create_processor
from processors.urls import URL_MAP_KEY, UrlShortener, restore_urls, shorten_urls

SEARCH = (
    "https://www.example.com/search?q=context+graph+compaction&sca_esv=58124&source=hp"
    "&ei=Zx81ZqzXNoGBxc8P&iflsig=AL9hbdgAAAAAZj"
)
QUERY = SEARCH[SEARCH.index("?") :]
TAG = re.compile(r"\?[^~\s]{0,16}~[0-9a-f]{8,32}")


class Pair(NamedTuple):
    left: str
    right: int


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)
    summary: str
    links: list[str]
    score: int = 0


class Aliased(BaseModel):
    model_config = ConfigDict(extra="allow")
    link: str = Field(alias="linkUrl")


class Strict(BaseModel):
    text: str

    @field_validator("text")
    @classmethod
    def _short(cls, value: str) -> str:
        if len(value) > 60:
            raise ValueError("too long")
        return value


def replaces(proposal: Proposal) -> list[Replace]:
    edits = [edit for edit in proposal.edits if isinstance(edit, Replace)]
    assert len(edits) == len(proposal.edits)
    return edits


class TestShortenUrls:
    def test_long_query_becomes_a_tag_and_comes_back(self) -> None:
        """A long query string is replaced by a tag; the mapping restores it exactly."""
        text = f"Results at {SEARCH}#top, see there."
        short, mapping = shorten_urls(text)
        (tag,) = mapping
        assert TAG.fullmatch(tag)
        assert mapping[tag] == QUERY
        assert short == text.replace(QUERY, tag)
        assert short.endswith("#top, see there.")
        assert restore_urls(short, mapping) == text

    def test_tags_are_deterministic_and_shared(self) -> None:
        """The same query gives the same tag, in one text and across calls."""
        text = f"{SEARCH} and again {SEARCH}"
        short, mapping = shorten_urls(text)
        assert len(mapping) == 1
        assert shorten_urls(text) == (short, mapping)
        assert short.count(next(iter(mapping))) == 2

    @pytest.mark.parametrize(
        "text",
        [
            "no links here",
            "https://example.com/path/without/query/string/at/all/but/long",
            "https://example.com/a?q=short",
            "",
        ],
    )
    def test_nothing_to_shorten(self, text: str) -> None:
        """Texts without long query strings come back unchanged, with no mapping."""
        assert shorten_urls(text) == (text, {})

    def test_only_where_it_shortens(self) -> None:
        """A query no longer than its tag is left as it is."""
        text = "https://example.com/a?q=abcdef"
        assert shorten_urls(text, min_length=8) == (text, {})

    def test_sentence_punctuation_stays_outside(self) -> None:
        """Closing punctuation of the sentence is not taken as part of the query."""
        text = f"(see {SEARCH})."
        short, mapping = shorten_urls(text)
        assert short.endswith(f"{next(iter(mapping))}).")

    def test_a_tag_already_in_the_text_is_not_reused(self) -> None:
        """If the text already holds the would-be tag, a longer one is chosen."""
        _, first = shorten_urls(SEARCH)
        (tag,) = first
        text = f"{SEARCH} literal {tag} stays"
        short, mapping = shorten_urls(text)
        (other,) = mapping
        assert other != tag and len(other) > len(tag)
        assert short.endswith(f"literal {tag} stays")
        assert restore_urls(short, mapping) == text

    @settings(max_examples=300, deadline=None)
    @given(st.text())
    def test_restore_inverts_shorten_for_any_text(self, text: str) -> None:
        """restore(shorten(x)) == x for arbitrary text."""
        short, mapping = shorten_urls(text, min_length=8)
        assert restore_urls(short, mapping) == text
        assert len(short) <= len(text)

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.one_of(
                st.text(max_size=20),
                st.sampled_from([SEARCH, "?~", "~", "#", "?", ")", ".", " ", "\n", QUERY]),
                st.builds(
                    lambda host, query, tag: f"https://{host}.io/p?{query}{tag}",
                    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
                    st.text(st.characters(exclude_characters=" \n\t"), max_size=60),
                    st.sampled_from(["", "?~", "#x", ")", "."]),
                ),
            ),
            max_size=12,
        ).map("".join)
    )
    def test_restore_inverts_shorten_for_url_heavy_text(self, text: str) -> None:
        """With tag-like strings and odd punctuation, and shortened twice, nothing is lost."""
        short, mapping = shorten_urls(text, min_length=8)
        assert restore_urls(short, mapping) == text
        again, more = shorten_urls(short + " " + text, min_length=8)
        assert restore_urls(restore_urls(again, more), mapping) == text + " " + text


class TestRestoreUrls:
    def test_recurses_through_containers(self) -> None:
        """Dict keys and values, lists, tuples and named tuples are rebuilt with originals."""
        short, mapping = shorten_urls(SEARCH)
        value: Any = {short: [short, (short, 1)], "pair": Pair(short, 2), "n": 3}
        restored = restore_urls(value, mapping)
        assert restored == {SEARCH: [SEARCH, (SEARCH, 1)], "pair": Pair(SEARCH, 2), "n": 3}
        assert isinstance(restored["pair"], Pair)

    def test_pydantic_models_are_rebuilt(self) -> None:
        """A model comes back as a new validated model; nested nodes recompute their text."""
        short, mapping = shorten_urls(SEARCH)
        answer = Answer(summary=f"see {short}", links=[short])
        restored = restore_urls(answer, mapping)
        assert restored == Answer(summary=f"see {SEARCH}", links=[SEARCH])
        assert answer.links == [short]  # the input is untouched
        node = UserNode(id="u", content=(TextPart(text=short),), meta={"link": short})
        assert node.text == short  # computed (and cached) before restoring
        again = restore_urls(node, mapping)
        assert again.text == SEARCH
        assert again.meta == {"link": SEARCH}
        assert isinstance(again.meta, MappingProxyType)

    def test_aliases_and_extra_fields_are_restored(self) -> None:
        """Aliased fields validate through their alias; extra fields are restored too."""
        short, mapping = shorten_urls(SEARCH)
        model = Aliased.model_validate({"linkUrl": short, "note": f"at {short}"})
        restored = restore_urls(model, mapping)
        assert restored.link == SEARCH
        assert restored.model_extra == {"note": f"at {SEARCH}"}

    def test_a_model_that_refuses_validation_is_copied(self) -> None:
        """A model whose validators reject the restored value is still restored (copied)."""
        short, mapping = shorten_urls(SEARCH)
        restored = restore_urls(Strict(text=short), mapping)
        assert isinstance(restored, Strict) and restored.text == SEARCH

    def test_everything_else_is_left_alone(self) -> None:
        """Other values, and containers with nothing to restore, are the same objects."""
        short, mapping = shorten_urls(SEARCH)
        untouched: list[Any] = [3, 2.5, None, b"bytes" + short.encode(), {short}, ["plain"]]
        for value in untouched:
            assert restore_urls(value, mapping) is value
        assert restore_urls(short, {}) is short

    def test_cycles_do_not_recurse_forever(self) -> None:
        """A self-referencing list is restored without looping."""
        short, mapping = shorten_urls(SEARCH)
        loop: list[Any] = [short]
        loop.append(loop)
        restored = restore_urls(loop, mapping)
        assert restored[0] == SEARCH and restored[1] is loop


class TestUrlShortener:
    def test_bad_option_is_a_configuration_error(self) -> None:
        """A too-small threshold fails at construction, naming the option."""
        with pytest.raises(ConfigurationError, match="min_query_chars"):
            UrlShortener(min_query_chars=2)

    def test_registered_by_name(self) -> None:
        """The shortener is available from the registry."""
        assert "shorten_urls" in available_processors()
        assert isinstance(create_processor("shorten_urls"), UrlShortener)

    async def test_replacement_carries_its_mapping(self) -> None:
        """The new node's meta maps tags back; restoring gives the original text exactly."""
        graph = ContextGraph()
        graph.add_user("search")
        graph.add_assistant(tool_calls=[{"id": "w", "name": "web", "arguments": {}}])
        text = "\n".join(f"{i}. {SEARCH}&page={i}" for i in range(10))
        image = ImagePart(media_type="image/png", data="aGk=")
        graph.add_tool_result("w", [TextPart(text=text), image], is_error=True)
        ctx = ProcessorContext.for_graph(graph)
        node = graph[graph.by_kind("tool_result")[0]]
        proposal = await UrlShortener().propose([node], ctx)
        (edit,) = replaces(proposal)
        new = edit.replacement
        mapping = new.meta[URL_MAP_KEY]
        assert isinstance(mapping, dict) and len(mapping) == 10
        assert restore_urls(new.text, {str(k): str(v) for k, v in mapping.items()}) == text
        assert new.content[1] == image and new.call_id == "w"
        assert proposal.tokens_before == ctx.count(node) > proposal.tokens_after
        assert proposal.tokens_after == ctx.count(new)
        assert proposal.base_version == graph.version

    async def test_skips_pinned_plain_and_empty(self) -> None:
        """Pinned nodes, nodes without long URLs and empty targets give no edits."""
        graph = ContextGraph()
        ctx = ProcessorContext.for_graph(graph)
        pinned = UserNode(id="p", content=(TextPart(text=SEARCH),), pinned=True)
        plain = UserNode(id="q", content=(TextPart(text="hello"),))
        assert (await UrlShortener().propose([pinned, plain], ctx)).empty
        assert (await UrlShortener().propose([], ctx)).empty

    async def test_thinking_is_never_rewritten(self) -> None:
        """Only text parts change; thinking blocks go back byte for byte."""
        graph = ContextGraph()
        ctx = ProcessorContext.for_graph(graph)
        thinking = ThinkingPart(thinking=f"maybe {SEARCH}", signature="sig")
        node = UserNode(id="t", content=(thinking, TextPart(text=f"open {SEARCH}")))
        (edit,) = replaces(await UrlShortener().propose([node], ctx))
        assert edit.replacement.content[0] == thinking
        assert SEARCH not in edit.replacement.text
