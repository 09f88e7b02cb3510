"""Typing by what a document's markup says: headings over a repository link, links to a site's home
page or to a code host, versions after a name, and words only their place capitalises."""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.entity_types import type_hits
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import UNKNOWN_LABEL, TextChunk


def hits_for(text: str, names: Sequence[tuple[str, str]]) -> list[Hit]:
    out = []
    for name, label in names:
        start = text.index(name)
        out.append(Hit(start, start + len(name), name, label))
    return out


def typed_text(text: str, names: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    chunk = TextChunk(index=0, text=text, start=0, end=len(text))
    [hits] = type_hits([[chunk]], [hits_for(text, names)], DEFAULT_ONTOLOGY)
    assert all(text[h.start : h.end] == h.name for h in hits)
    return {h.name: h.label for h in hits}


def test_a_heading_over_a_repository_link_names_a_project() -> None:
    text = (
        "### Mangum\n\n"
        '<a href="https://github.com/erm/mangum" target="_blank">GitHub</a> |\n\n'
        "Serverless adapter.\n\n"
        "### Fixed\n\n"
        "* Fix a leak [#2984](https://github.com/encode/starlette/pull/2984).\n"
    )
    found = typed_text(text, [("Mangum", "Person"), ("Fixed", UNKNOWN_LABEL)])
    assert found["Mangum"] == "Technology"  # the section presents the project its link points at
    assert "Fixed" not in found  # a changelog section citing a pull request presents no project
    assert found["GitHub"] == "Product"  # a link's text naming the code host is the hosted service


def test_a_link_to_a_site_s_home_page_alone_in_a_list_item_names_its_owner() -> None:
    text = (
        "Our sponsors:\n\n"
        '<ul><li><a href="https://holvi.com/" rel="nofollow">Holvi</a></li>\n'
        '<li><a href="https://www.ax-semantics.com/">AX Semantics</a></li></ul>\n\n'
        "Used by [Mozilla][mozilla]. Errors go to [Sentry](https://sentry.io/) as well.\n\n"
        "[mozilla]: https://www.mozilla.org/\n"
    )
    found = typed_text(text, [("Sentry", "Product")])
    assert found["Holvi"] == "Organization" and found["AX Semantics"] == "Organization"
    assert found["Mozilla"] == UNKNOWN_LABEL  # named in a sentence: an entity, its label left to the other cues
    assert found["Sentry"] == "Product"


def test_a_version_after_a_name_is_part_of_it_and_makes_it_software() -> None:
    text = "Bob wrote `httpx` in 2020.\n\n* Add support for Python 3.12. Drop Windows 7 and Python 3.\n"
    found = typed_text(text, [("Python", "Person"), ("Windows", "Organization"), ("Bob", "Person")])
    assert found == {"Python 3.12": "Technology", "Windows 7": "Technology", "Bob": "Person"}


def test_a_word_only_its_place_capitalises_is_no_entity() -> None:
    text = (
        "* Tweak `create_ssl_context` defaults.\n"
        "<h2>Become a Sponsor</h2>\n"
        "INFO: Started server process. Full details below, as you may tweak and start it.\n"
        "* Colorama is used on Windows, where we load Colorama first.\n"
    )
    names = ["Tweak", "Become", "Started", "Full", "Colorama"]
    found = typed_text(text, [(n, UNKNOWN_LABEL) for n in names])
    assert found == {"Colorama": UNKNOWN_LABEL}  # capitalised mid-sentence: written as a name


def test_names_in_backticks_are_classes_packages_and_distributions_not_variables() -> None:
    text = (
        "Consumers no longer crash with `io.UnsupportedOperation`. Use `httpx.Timeout(5.0)`, not\n"
        "`request.DATA` or `ParameterSource.DEFAULT`. Run tests with `pytest-xdist`. We no longer use\n"
        "the `chardet` library, and pass `scope` and `max_age` along; `parser` is fine.\n"
    )
    assert typed_text(text) == {
        "UnsupportedOperation": "Technology",
        "Timeout": "Technology",
        "pytest-xdist": "Technology",  # no identifier holds a hyphen: a distribution's name
        "chardet": "Technology",  # no English word, and its clause calls it software
    }


def test_a_sponsor_list_names_sites_by_their_host_s_leading_word() -> None:
    text = (
        '<li><a href="http://www.cyaninc.com/" rel="nofollow">Cyan</a></li>\n'
        '<li><a href="https://www.aba-systems.com.au/">ABA Systems</a></li>\n'
        '<li><a href="https://docs.example.com/">Documentation</a></li>\n'
    )
    assert typed_text(text) == {"Cyan": "Organization", "ABA Systems": "Organization"}


def test_a_word_mostly_written_in_lower_case_is_common_though_a_title_capitalises_it() -> None:
    text = (
        "# Async Support\n\n"
        "We added support for proxies, better support for retries, support for streams and support\n"
        "for HTTP/2, and support for trio. See the Async Support notes in `httpx`.\n"
    )
    assert "Support" not in typed_text(text, [("Support", UNKNOWN_LABEL)])


def test_phrases_of_a_title_linked_in_a_list_are_no_entities() -> None:
    text = (
        "* [Full Text Search in Django REST Framework with Database Backends][fts]\n"
        "* [Developing RESTful APIs with Django REST Framework][dev]\n\n"
        "Full details are on the page, and the search is full text. The database backends are many,\n"
        "developing them is fun. Django REST Framework is used with `django`.\n"
    )
    names = [("Full Text Search", UNKNOWN_LABEL), ("Database Backends", UNKNOWN_LABEL)]
    names += [("Developing RESTful APIs", UNKNOWN_LABEL), ("Django REST Framework", UNKNOWN_LABEL)]
    assert set(typed_text(text, names)) == {"Django REST Framework", "django"}


def test_a_name_written_as_code_and_linked_is_software() -> None:
    text = (
        "* [`itsdangerous`][itsdangerous] - Required for sessions.\n"
        "Some use [`asgi-cors`](https://example.com/asgi_cors.py) instead.\n\n"
        "[itsdangerous]: https://itsdangerous.palletsprojects.com/\n"
    )
    assert typed_text(text) == {"itsdangerous": "Technology", "asgi-cors": "Technology"}


def test_html_tags_break_sentences_and_hyphenated_openers_are_common() -> None:
    text = "<ul><li>✓ Priority support</li></ul>\n\n* In-process background tasks.\n"
    names = [("Priority", UNKNOWN_LABEL), ("In-process", UNKNOWN_LABEL)]
    assert typed_text(text, names) == {}  # "li Priority" is no name written mid-sentence


def test_numbers_cited_as_code_or_issues_and_durations_are_no_dates() -> None:
    text = "Fixed in {issue}`834, 1397` and #1091 in 2015, even for less than 0.5 seconds. Raised $50,000.\n"
    names = [("1397", "Date"), ("1091", "Date"), ("2015", "Date"), ("0.5 seconds", "Date"), ("$50,000", UNKNOWN_LABEL)]
    assert typed_text(text, names) == {"2015": "Date"}


def test_an_acronym_with_a_four_digit_number_is_a_standard() -> None:
    text = "Switch from IDNA 2003 to the new one, as RFC 7231 says. `httpx` does.\n"
    found = typed_text(text, [("IDNA", UNKNOWN_LABEL), ("2003", "Date"), ("RFC", "Organization")])
    assert found == {"IDNA 2003": "Law", "RFC 7231": "Law"}


def test_long_words_shouted_in_a_licence_and_words_of_inline_scripts_are_no_entities() -> None:
    text = (
        "Tom Christie wrote `httpx`.\n\n"
        "IN NO EVENT SHALL THE HOLDERS BE LIABLE FOR ANY INCIDENTAL DAMAGES, ALL OF WHICH ARE DISCLAIMED.\n\n"
        "<script type='text/javascript'>fnames[0]='EMAIL';ftypes[1]='Conflict';</script>\n"
    )
    names = [("Tom Christie", "Person"), ("INCIDENTAL", "Organization"), ("DISCLAIMED", "Organization")]
    names += [("Conflict", UNKNOWN_LABEL)]
    assert typed_text(text, names) == {"Tom Christie": "Person"}


def test_a_generic_type_in_backticks_is_a_class() -> None:
    text = "Change the type of `Extensions` from `Mapping[Str, Any]` to a dict.\n"
    assert typed_text(text) == {"Extensions": "Technology", "Mapping": "Technology"}


def test_standard_library_modules_and_classes_taken_from_a_module_are_software() -> None:
    text = (
        "When a long option name isn't valid, use `difflib` to suggest one; `value` is a variable.\n\n"
        "    router = routers.DefaultRouter()\n"
        "    class UserSerializer(serializers.Serializer):\n"
        "        pass\n\n"
        "```python\nclass MockMiddleware:\n    pass\n```\n"
        "Register UserSerializer and MockMiddleware.\n"
    )
    names = [("UserSerializer", UNKNOWN_LABEL), ("MockMiddleware", UNKNOWN_LABEL)]
    assert typed_text(text, names) == {
        "difflib": "Technology",
        "DefaultRouter": "Technology",
        "Serializer": "Technology",  # a library's class, taken from its module
    }  # MockMiddleware: a class the sample defines, an example


def test_a_release_codename_is_an_event() -> None:
    text = 'Released 2015-11-24, codename "pow pow"\n\n- Fix `Group` help.\n'
    assert typed_text(text)["pow pow"] == "Event"


def test_versioned_protocol_names_and_english_words_called_packages_are_software() -> None:
    text = (
        "Remove TLS versions (TLSv1 and TLSv1.1), support HTTP/2, and drop the `requests` library.\n"
        "Pass `timeout` along.\n"
    )
    found = typed_text(text, [("TLSv", UNKNOWN_LABEL)])  # the rules cut a piece off "TLSv1"
    assert found == {"TLSv1": "Technology", "TLSv1.1": "Technology", "HTTP/2": "Technology", "requests": "Technology"}


def test_a_sponsor_link_cut_between_two_passages_still_names_its_site() -> None:
    doc = '<li><a href="https://garfo.io/" rel="nofollow">Garfo</a></li>\n'
    cut = doc.index("Garfo") - 5
    first = TextChunk(index=0, text=doc[:cut], start=0, end=cut)
    second = TextChunk(index=1, text=doc[cut:], start=cut, end=len(doc))
    [_, hits] = type_hits([[first, second]], [[], []], DEFAULT_ONTOLOGY)
    assert {h.name: h.label for h in hits} == {"Garfo": "Organization"}
    assert all(second.text[h.start : h.end] == h.name for h in hits)


def test_the_words_after_a_trimmed_common_word_go_with_it() -> None:
    text = "* Support for Python 3.13. We support `httpx` and support it.\n"
    assert typed_text(text, [("Support for Python", UNKNOWN_LABEL)]) == {"Python 3.13": "Technology"}


def test_a_link_or_heading_that_is_a_phrase_names_nothing() -> None:
    text = (
        "Please [submit a pull request](https://github.com/encode/starlette/compare), see the\n"
        '<a href="https://github.com/encode/starlette/discussions">GitHub repository</a> and the\n'
        '<a href="https://starlette-login.readthedocs.io/en/stable/">Documentation</a>; the\n'
        "documentation is long. Used by [Heroku][heroku] and [requests](https://github.com/psf/requests).\n\n"
        "## Third party middleware\n\n"
        "[GitHub](https://github.com/encode/starlette)\n\n"
        "[heroku]: https://www.heroku.com/\n"
    )
    found = typed_text(text)
    assert found == {"GitHub": "Product", "Heroku": UNKNOWN_LABEL, "requests": "Technology"}


def test_a_sponsor_wall_s_company_is_an_organisation_whatever_its_shape() -> None:
    text = (
        "Install with `pip install httpx`.\n\n"
        '<li><a href="https://www.laterpay.net/">LaterPay</a></li>\n'
        '<li><a href="https://www.dabapps.com/">DabApps</a></li>\n'
    )
    found = typed_text(text)
    assert found["LaterPay"] == found["DabApps"] == "Organization"  # PascalCase, yet no code


def test_an_untyped_name_in_a_list_of_names_takes_the_kind_most_items_carry() -> None:
    text = (
        "**Individual backers**: Jure Cuhalev, Kevin Brolly, Ferenc Szalai, "
        '<a href="https://linovia.com/en/">Xavier Ordoquy</a>, <a href="http://www.paulwhipp.com/">Paul Whipp</a>.\n'
    )
    names = [("Jure Cuhalev", "Person"), ("Kevin Brolly", "Person"), ("Ferenc Szalai", "Person")]
    names += [("Xavier Ordoquy", UNKNOWN_LABEL)]
    found = typed_text(text, names)
    assert found["Xavier Ordoquy"] == found["Paul Whipp"] == "Person"
