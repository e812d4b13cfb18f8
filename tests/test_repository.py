"""The repository explains itself: what the code and docs cite is in the repository.

Comments and docs point at sections of ``docs/protocol.md`` ("docs/protocol.md §6.3", or a
bare "§6.3" in a file that names it) and at principles and sections of ``docs/design.md``;
every such citation must name a heading that exists. Nothing may point at material outside
the repository, nor carry tracker tags.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from support.paths import DATA, ROOT, TESTS

DOCS = ROOT / "docs"
PROTOCOL = DOCS / "protocol.md"
DESIGN = DOCS / "design.md"

# Spelled in pieces, so that this file can be checked like any other.
FORBIDDEN = tuple(
    "".join(pieces)
    for pieces in (
        ("PROTOCOL", ".md"),  # reference material kept outside the repository
        ("DESIGN", ".md"),
        ("STYLE", ".md"),
        ("/work", "/shared"),
        ("tool-calls", "-v2"),
        ("(issue", ":"),  # tracker tags
    )
)
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", "node_modules"}

# A path of one machine: its work tree, root's home, a named user's home, a virtualenv's
# interpreter by absolute path. Readers run relative commands; examples use the
# placeholder users below.
MACHINE_PATH = re.compile(
    r"(?<![\w.~-])(?:/work/|/root/|/(?:home|Users)/(?!(?:me|user|u|NAME)/)[\w.-]+/"
    r"|/\S*?venv/bin/python)"
)
MACHINE_PATH_TOPS = ("README.md", "CHANGELOG.md", "docs", "bench", "acp_proxy", ".ci")

SECTION_HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)
SECTION_REF = re.compile(r"§(\d+(?:\.\d+)*)")
# Sections of other specifications, not of docs/protocol.md.
FOREIGN_REF = re.compile(r"(?:JSON-RPC 2\.0|RFC ?\d+) §\d")
PRINCIPLE = re.compile(r"^(\d+)\. \*\*", re.MULTILINE)
PRINCIPLE_REF = re.compile(r"design\.md,? principles? (\d+)")
DESIGN_SECTION_REF = re.compile(r'design\.md, "([^"]+)"')
ANCHOR_REF = re.compile(r"\((?:docs/)?(protocol|design)\.md#([^)\s]+)\)")


def _files() -> Iterator[Path]:
    """Every text file of the package, tests (not tests/npm), benchmarks, docs, README."""
    yield ROOT / "README.md"
    for top in (ROOT / "acp_proxy", TESTS, ROOT / "bench", DOCS):
        for path in sorted(top.rglob("*")):
            rel = path.relative_to(ROOT)
            if not path.is_file() or SKIPPED_DIRS.intersection(rel.parts):
                continue
            if rel.parts[:2] == ("tests", "npm"):
                continue
            yield path


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None  # binary data: nothing cited in it


def forbidden_mentions(text: str) -> list[str]:
    return [word for word in FORBIDDEN if word in text]


def headings(markdown: str) -> list[str]:
    return [m.group(0).lstrip("#").strip() for m in re.finditer(r"^#{1,4} .+$", markdown, re.M)]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to ``-``."""
    kept = re.sub(r"[^\w\- ]", "", heading.lower())
    return kept.replace(" ", "-")


def protocol_sections(markdown: str) -> set[str]:
    return set(SECTION_HEADING.findall(markdown))


def design_principles(markdown: str) -> set[str]:
    principles = markdown.split("## Principles", 1)[1].split("\n## ", 1)[0]
    return set(PRINCIPLE.findall(principles))


def bad_citations(
    text: str, sections: set[str], principles: set[str], design: list[str]
) -> list[str]:
    """The citations in ``text`` that name no section of protocol.md or design.md."""
    problems = []
    own = FOREIGN_REF.sub("", text)
    refs = SECTION_REF.findall(own)
    if refs and "protocol.md" not in text:
        problems.append(f"§{refs[0]} without saying it is docs/protocol.md")
    problems += [f"§{n}" for n in refs if n not in sections]
    problems += [f"principle {n}" for n in PRINCIPLE_REF.findall(text) if n not in principles]
    problems += [f'"{h}"' for h in DESIGN_SECTION_REF.findall(text) if h not in design]
    return problems


def test_nothing_points_outside_the_repository() -> None:
    found = {}
    for path in _files():
        text = _text(path)
        if text is not None and (words := forbidden_mentions(text)):
            found[str(path.relative_to(ROOT))] = words
    assert found == {}


def machine_paths(text: str) -> list[str]:
    return [m.group(0) for m in MACHINE_PATH.finditer(text)]


def test_no_path_of_one_machine_in_docs_bench_readme_or_the_package() -> None:
    found = {}
    for top in MACHINE_PATH_TOPS:
        path = ROOT / top
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file() and "__pycache__" not in file.parts:
                text = _text(file)
                if text is not None and (paths := machine_paths(text)):
                    found[str(file.relative_to(ROOT))] = paths
    assert found == {}


def test_every_citation_names_a_section_that_exists() -> None:
    protocol = PROTOCOL.read_text(encoding="utf-8")
    design = DESIGN.read_text(encoding="utf-8")
    sections = protocol_sections(protocol)
    principles = design_principles(design)
    design_headings = headings(design)
    found = {}
    cited = 0
    for path in _files():
        text = _text(path)
        if text is None or path in (PROTOCOL, Path(__file__)):  # this file cites on purpose
            continue
        cited += len(SECTION_REF.findall(text))
        if problems := bad_citations(text, sections, principles, design_headings):
            found[str(path.relative_to(ROOT))] = problems
    assert found == {}
    assert cited > 50  # the code does cite the protocol: the walk found the files


def test_links_into_the_two_docs_have_their_anchors() -> None:
    anchors = {
        "protocol": {slug(h) for h in headings(PROTOCOL.read_text(encoding="utf-8"))},
        "design": {slug(h) for h in headings(DESIGN.read_text(encoding="utf-8"))},
    }
    missing = []
    for path in [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]:
        for doc, anchor in ANCHOR_REF.findall(path.read_text(encoding="utf-8")):
            if anchor not in anchors[doc]:
                missing.append(f"{path.name}: {doc}.md#{anchor}")
    assert missing == []


def test_the_9_2_fixture_is_the_example_in_the_doc() -> None:
    protocol = PROTOCOL.read_text(encoding="utf-8")
    section = protocol.split("### 9.2 ", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    fixture = (DATA / "reconstruct" / "protocol-9.2-v2.txt").read_text(encoding="utf-8")
    assert fixture in blocks


def test_the_checks_can_fail() -> None:
    assert machine_paths("    /work/venv/bin/python bench/run.py --quick") == ["/work/"]
    assert machine_paths("run /opt/x/.venv/bin/python -m pytest") == ["/opt/x/.venv/bin/python"]
    assert machine_paths("cd /home/alice/acp-proxy; ls /root/.cache") == ["/home/alice/", "/root/"]
    assert machine_paths("/Users/bob/src") == ["/Users/bob/"]
    assert machine_paths('"--db", "/home/me/acp.sqlite"; /home/user/project, /home/NAME/') == []
    assert machine_paths("python bench/run.py; . .venv/bin/activate; ~/.local/state") == []
    assert forbidden_mentions(f"see {FORBIDDEN[1]}") == [FORBIDDEN[1]]
    assert forbidden_mentions(f"Lifecycle {FORBIDDEN[-1]} foundation)") == [FORBIDDEN[-1]]
    assert forbidden_mentions("see docs/design.md and docs/protocol.md") == []
    sections, principles = {"1", "2.1"}, {"1", "6"}
    assert bad_citations("docs/protocol.md §2.1, §1", sections, principles, []) == []
    assert bad_citations("docs/protocol.md §2.2", sections, principles, []) == ["§2.2"]
    assert bad_citations("(§2.1)", sections, principles, []) != []  # which document?
    assert bad_citations("JSON-RPC 2.0 §5 and docs/protocol.md", sections, principles, []) == []
    assert bad_citations("docs/design.md principle 8", sections, principles, []) == ["principle 8"]
    assert bad_citations('docs/design.md, "Layers"', sections, principles, ["Layers"]) == []
    assert bad_citations('docs/design.md, "Lairs"', sections, principles, ["Layers"]) != []
    assert slug("2.3 Remote transports: Streamable HTTP and WebSocket") == (
        "23-remote-transports-streamable-http-and-websocket"
    )
    protocol = PROTOCOL.read_text(encoding="utf-8")
    assert {"1", "2.1", "6.3", "9.2", "12.7"} <= protocol_sections(protocol)
    assert design_principles(DESIGN.read_text(encoding="utf-8")) == {str(n) for n in range(1, 8)}


def same_basenames(paths: list[Path]) -> dict[str, list[str]]:
    """Test modules that share a file name: without packages, pytest imports one by its
    name and refuses the other ("import file mismatch"), in whichever order it meets them."""
    seen: dict[str, list[str]] = {}
    for p in paths:
        seen.setdefault(p.name, []).append(str(p.relative_to(TESTS)))
    return {name: where for name, where in seen.items() if len(where) > 1}


def test_test_modules_have_names_of_their_own() -> None:
    assert same_basenames(sorted(TESTS.rglob("test_*.py"))) == {}
    assert same_basenames([TESTS / "a" / "test_x.py", TESTS / "b" / "test_x.py"]) == {
        "test_x.py": ["a/test_x.py", "b/test_x.py"]
    }
